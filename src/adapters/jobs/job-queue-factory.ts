/**
 * Chooses the job queue and the thread lock from the storage backend, as
 * storage-factory.ts chooses storage: on SQLite the embedded scheduler and an
 * in-process lock (one machine); on PostgreSQL pg-boss and advisory locks (several
 * instances on one database).
 */
import type { Logger } from 'pino';
import type { JobQueue } from '../../app/job-queue.js';
import type { Clock } from '../../app/ports.js';
import type { LogContextRunner } from '../logging/create-logger.js';
import { InProcessThreadLocks, type ThreadLockService } from '../../app/thread-lock.js';
import { PostgresThreadLocks } from '../locks/postgres-thread-locks.js';
import type { PostgresListener } from '../sql/postgres-listener.js';
import type { SqlStorage } from '../sql/sql-storage.js';
import { EmbeddedJobQueue } from './embedded-job-queue.js';
import { PgBossJobQueue, pgBossSchemaFor } from './pg-boss-job-queue.js';

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
}

export function openJobQueue(target: JobQueueTarget): JobQueue {
  if (target.storage.kind === 'postgres') {
    if (!target.databaseUrl) throw new Error('PostgreSQL storage without a database URL');
    return new PgBossJobQueue({ connectionString: target.databaseUrl, schema: pgBossSchemaFor(target.schema), logger: target.logger, ...(target.withLogContext ? { withLogContext: target.withLogContext } : {}) });
  }
  return new EmbeddedJobQueue({
    context: target.storage.context,
    clock: target.clock,
    logger: target.logger,
    ...(target.withLogContext ? { withLogContext: target.withLogContext } : {}),
    ...(target.jobLeaseMs ? { leaseMs: target.jobLeaseMs } : {}),
  });
}

export async function openThreadLocks(target: Omit<JobQueueTarget, 'clock' | 'jobLeaseMs'> & { listener?: PostgresListener | undefined }): Promise<ThreadLockService> {
  if (target.storage.kind === 'postgres') {
    if (!target.databaseUrl) throw new Error('PostgreSQL storage without a database URL');
    return PostgresThreadLocks.open({ connectionString: target.databaseUrl, schema: target.schema, logger: target.logger, ...(target.listener ? { listener: target.listener } : {}) });
  }
  return new InProcessThreadLocks();
}
