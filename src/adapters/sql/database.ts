/**
 * Kysely table types shared by the SQLite and PostgreSQL backends.
 *
 * Timestamps are written as ISO strings; SQLite reads them back as that text, pg as a
 * `Date` (timestamptz), so reads go through `isoFromDatabase`. JSON columns are text on
 * SQLite and json/jsonb on PostgreSQL, where the pool's type parsers hand them back as raw
 * text, so both backends decode the same way (see json.ts).
 */
import type { ColumnType, Generated, Kysely, Transaction } from 'kysely';

export type SqlDialectName = 'sqlite' | 'postgres';

/** Written as ISO text; read back as text (SQLite) or a Date (pg). Shared by every table type. */
export type Timestamp = ColumnType<Date | string, string, string>;
export type NullableTimestamp = ColumnType<Date | string | null, string | null, string | null>;
/** JSON encoded as text: what we write, and what both backends hand back. */
type JsonText = string;

export interface AgentsTable {
  user_id: string;
  id: string;
  name: string;
  kind: string;
  system_prompt: string;
  model: string | null;
  settings: JsonText;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ThreadsTable {
  id: string;
  user_id: string;
  agent_id: string;
  title: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  last_user_activity_at: NullableTimestamp;
  visible_count: number;
  last_visible_preview: string | null;
  last_visible_at: NullableTimestamp;
  message_count: number;
}

/** A (thread, checkpoint namespace) of the thread store (migration 25); its rows are keyed by `key`. */
export interface ThreadKeysTable {
  key: Generated<number>;
  thread_id: string;
  checkpoint_ns: string;
}

/**
 * A thread's messages, each version once (migration 25), written by the checkpoint saver
 * (thread-saver.ts) only: read here. A row history shows has a visibility; its time is
 * epoch milliseconds on SQLite, a timestamptz on PostgreSQL (see createdAtFromDatabase).
 */
export interface ThreadMessagesTable {
  thread_key: number;
  seq: number;
  message_id: string;
  type: string;
  body: Uint8Array;
  visibility: string | null;
  run_id: string | null;
  created_at: ColumnType<number | Date | string | null, never, never>;
}

export interface RunsTable {
  id: string;
  thread_id: string;
  user_id: string;
  agent_id: string;
  trigger: string;
  meta: JsonText;
  correlation_id: string;
  status: string;
  reason: string | null;
  error_code: string | null;
  error_message: string | null;
  model: string;
  requested_at: Timestamp;
  started_at: Timestamp;
  ended_at: NullableTimestamp;
  model_inputs: JsonText | null;
  /** 1 once the run's thread was deleted (migration 21): the record stays, no thread lists it. */
  thread_deleted: Generated<number>;
  /** 1 when `meta` was stored without its core keys, rebuilt on read from the columns (migration 26, run-meta-codec.ts). */
  meta_core_omitted: Generated<number>;
}

/** SQLite adds an INTEGER PRIMARY KEY `row_id` for its FTS index; only raw SQL uses it. */
export interface MemoriesTable {
  id: string;
  user_id: string;
  agent_id: string;
  content: string;
  created_at: Timestamp;
  /** When its text was last written (a replace moves it, not created_at); migration 20. */
  updated_at: Timestamp;
  /** NULL for memories written before migration 17. */
  origin: 'api' | 'agent' | null;
  run_id: string | null;
  thread_id: string | null;
}

export interface VigilMigrationsTable {
  version: number;
  name: string;
  applied_at: Timestamp;
}

export interface Database {
  agents: AgentsTable;
  threads: ThreadsTable;
  thread_keys: ThreadKeysTable;
  thread_messages: ThreadMessagesTable;
  runs: RunsTable;
  memories: MemoriesTable;
  vigil_migrations: VigilMigrationsTable;
}

/**
 * What every repository gets: the query builder, which SQL dialect it speaks, and the way
 * to run a transaction (on SQLite that also holds the checkpointer's writes back, see
 * sqlite-storage.ts).
 */
export interface SqlContext {
  readonly db: Kysely<Database>;
  readonly dialect: SqlDialectName;
  transaction<T>(work: (trx: Transaction<Database>) => Promise<T>): Promise<T>;
}
