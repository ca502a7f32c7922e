import type { ModelInputRecord } from '../../domain/context/context-report.js';

/** Calls kept per run: a tool loop's steps are bounded well below this (I9). */
const MAX_CALLS_PER_RUN = 64;
/** Runs whose records wait for their end; a run that never ends (its process died) must not grow this. */
const MAX_RUNS = 10_000;

/**
 * What each model call of a run in flight received, collected by run id while the graph
 * runs (the context window tells it), and taken by the run when it records its end, so
 * the record is written with the run's own final update — no extra write per call.
 */
export class ModelInputLog {
  readonly #byRun = new Map<string, ModelInputRecord[]>();

  note(runId: string, record: ModelInputRecord): void {
    let calls = this.#byRun.get(runId);
    if (!calls) {
      if (this.#byRun.size >= MAX_RUNS) this.#byRun.delete(this.#byRun.keys().next().value!);
      calls = [];
      this.#byRun.set(runId, calls);
    }
    if (calls.length < MAX_CALLS_PER_RUN) calls.push(record);
  }

  /** The run's records, once; later calls get none. */
  take(runId: string): ModelInputRecord[] {
    const calls = this.#byRun.get(runId) ?? [];
    this.#byRun.delete(runId);
    return calls;
  }
}
