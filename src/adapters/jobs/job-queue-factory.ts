/**
 * Chooses the job queue and the thread lock from the storage backend, as
 * storage-factory.ts chooses storage: on SQLite the embedded scheduler and an
 * in-process lock (one machine); on PostgreSQL the job table for due timers, pg-boss for
 * the rest, and advisory locks (several instances on one database).
 */
import type { Logger } from 'pino';
import type { JobQueue } from '../../app/job-queue.js';
import type { Clock } from '../../app/ports.js';
import type { LogContextRunner } from '../logging/create-logger.js';
import { InProcessThreadLocks, type ThreadLockService } from '../../app/thread-lock.js';
import { PostgresThreadLocks } from '../locks/postgres-thread-locks.js';
import type { PostgresListener } from '../sql/postgres-listener.js';
import type { SqlStorage } from '../sql/sql-storage.js';
import { EmbeddedJobQueue, type EmbeddedJobQueueOptions } from './embedded-job-queue.js';
import { PgBossJobQueue, pgBossSchemaFor } from './pg-boss-job-queue.js';
import { handOverPgBossTimers } from './pg-boss-timer-handover.js';
import { RoutedJobQueue } from './routed-job-queue.js';
import { FOLLOW_UP_QUEUE } from '../../app/autonomy/autonomy-dependencies.js';
import { CHECK_IN_QUEUE } from '../../app/check-ins/check-in-service.js';
import { SCHEDULE_QUEUE } from '../../app/schedules/schedule-service.js';

export interface JobQueueTarget {
  storage: SqlStorage;
  /** The PostgreSQL URL when storage is PostgreSQL. */
  databaseUrl: string | undefined;
  schema: string;
  clock: Clock;
  logger: Logger;
  /** Jobs run in their own log context through this (main.ts passes the logger's). */
  withLogContext?: LogContextRunner | undefined;
  /** Embedded scheduler only: how long a claim lasts without renewal (a dead process's job is redelivered after it). */
  jobLeaseMs?: number | undefined;
  /** PostgreSQL: the instance's shared LISTEN connection (job wake-ups across instances). */
  listener?: PostgresListener | undefined;
  /** Due-timer jobs run at once (and claimed per round trip), on either storage. */
  timerConcurrency?: number | undefined;
}

/** The due-timer queues: on PostgreSQL they leave pg-boss for the job table; on SQLite they have a scheduler of their own (see RoutedJobQueue). */
export const DUE_TIMER_QUEUES: ReadonlySet<string> = new Set([FOLLOW_UP_QUEUE, CHECK_IN_QUEUE, SCHEDULE_QUEUE]);

export function openJobQueue(target: JobQueueTarget): JobQueue {
  const embedded = (options: Partial<EmbeddedJobQueueOptions>) =>
    new EmbeddedJobQueue({
      context: target.storage.context,
      clock: target.clock,
      logger: target.logger,
      ...(target.withLogContext ? { withLogContext: target.withLogContext } : {}),
      ...(target.jobLeaseMs ? { leaseMs: target.jobLeaseMs } : {}),
      ...options,
    });
  // Due timers run `timerConcurrency` at once, claimed as many per round trip: a burst of
  // them due together is done in a few batches, not one job at a time (bench/timers.bench.ts).
  const timerOptions = target.timerConcurrency ? { concurrency: target.timerConcurrency } : {};
  if (target.storage.kind === 'postgres') {
    if (!target.databaseUrl) throw new Error('PostgreSQL storage without a database URL');
    const pgBoss = new PgBossJobQueue({ connectionString: target.databaseUrl, schema: pgBossSchemaFor(target.schema), logger: target.logger, ...(target.withLogContext ? { withLogContext: target.withLogContext } : {}) });
    if (!target.listener) return pgBoss;
    const timers = embedded({ ...timerOptions, wakeUps: { listener: target.listener, schema: target.schema } });
    const db = target.storage.context.db;
    return new RoutedJobQueue(timers, DUE_TIMER_QUEUES, pgBoss, () => handOverPgBossTimers({ db, pgBossSchema: pgBossSchemaFor(target.schema), vigilSchema: target.schema, queues: DUE_TIMER_QUEUES, logger: target.logger }));
  }
  // One machine: two schedulers over the one job table, so the other queues (outbound
  // webhooks, approvals, overlord) keep their own few at once, as pg-boss's do.
  return new RoutedJobQueue(embedded(timerOptions), DUE_TIMER_QUEUES, embedded({}));
}

export async function openThreadLocks(target: Omit<JobQueueTarget, 'clock' | 'jobLeaseMs'>): Promise<ThreadLockService> {
  if (target.storage.kind === 'postgres') {
    if (!target.databaseUrl) throw new Error('PostgreSQL storage without a database URL');
    return PostgresThreadLocks.open({ connectionString: target.databaseUrl, schema: target.schema, logger: target.logger, ...(target.listener ? { listener: target.listener } : {}) });
  }
  return new InProcessThreadLocks();
}
