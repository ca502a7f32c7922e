/** One printed figure. `dims` lets run.ts lay related rows out side by side. */
export interface BenchRow {
  group: string;
  name: string;
  value: number;
  unit: string;
  note?: string;
  dims?: Record<string, string | number>;
}

export interface BenchOptions {
  /** Smaller sizes and fewer repetitions: a smoke run. */
  quick: boolean;
  /** The slow extremes too (the turn group: LangGraph's savers and PostgreSQL at 10,000 messages). */
  full: boolean;
  /** PostgreSQL to measure on, or undefined when it did not answer (PostgreSQL rows are skipped). */
  postgresUrl: string | undefined;
  /** Registers work to do at the very end (drop a schema, remove a temp dir), even after a failure. */
  onCleanup(cleanup: () => Promise<void>): void;
  /** Progress lines go to stderr, so stdout holds only the report. */
  progress(message: string): void;
}

export type Bench = (options: BenchOptions) => Promise<BenchRow[]>;
