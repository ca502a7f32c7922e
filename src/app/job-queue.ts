/**
 * Durable jobs due at a time: the one mechanism under follow-up timers, schedule fires
 * and overlord heartbeats. On one machine an embedded scheduler over a table; on
 * PostgreSQL pg-boss (delayed jobs, singleton keys). Its guarantees carry I7: a job runs
 * at most once per key, across restarts and instances, and a due job is never silently
 * lost (a job in flight when a process dies is handed out again, so a handler must be
 * idempotent for its key — see the autonomy firing code for how).
 */
export interface DueJob {
  id: string;
  queue: string;
  /** Deduplication key: at most one pending job per (queue, key). */
  key: string;
  dueAt: string; // ISO 8601 UTC
  payload: Record<string, unknown>;
  /** 1 on the first delivery, more when a crashed or failed delivery is retried. */
  attempt: number;
}

export interface ScheduleJob {
  queue: string;
  key: string;
  dueAt: Date;
  payload: Record<string, unknown>;
}

export type JobHandler = (job: DueJob) => Promise<void>;

/** Thrown by a handler so that the queue delivers the job again later (with its backoff). */
export class RetryLater extends Error {}

/**
 * An open transaction on the storage the queue shares with the app tables, opaque to the
 * app layer (the adapters know it is a Kysely transaction). A job scheduled within one
 * commits or rolls back with the rows written beside it: a timer row and its job are
 * never one without the other.
 */
export type StorageTransaction = { readonly __brand: 'StorageTransaction' };

export interface ScheduleOptions {
  within?: StorageTransaction;
}

export interface JobQueue {
  /** Schedule a job; when a pending job with the same (queue, key) exists it is kept and `created` is false. */
  schedule(job: ScheduleJob, options?: ScheduleOptions): Promise<{ id: string; created: boolean }>;
  /** Cancel the pending job of (queue, key); false when there is none. `within`: in the caller's transaction, as for schedule. */
  cancel(queue: string, key: string, options?: ScheduleOptions): Promise<boolean>;
  /** Register the handler of a queue (before or after start). A throw fails the delivery; it is retried with backoff up to a bound. */
  work(queue: string, handler: JobHandler): Promise<void>;
  /** Idempotent; jobs that came due while nobody ran are delivered after start. */
  start(): Promise<void>;
  /** Stops taking jobs and waits for handlers in flight. Idempotent. */
  stop(): Promise<void>;
  /** Jobs waiting across queues (for metrics): due now, due later, running. May lag slightly. */
  depth(): Promise<QueueDepth>;
}

export interface QueueDepth {
  ready: number;
  deferred: number;
  active: number;
}
