import { PgBoss, fromKysely, type Job, type JobResult, type JobWithMetadata } from 'pg-boss';
import type { Logger } from 'pino';
import type { DueJob, JobHandler, JobQueue, QueueDepth, ScheduleJob, ScheduleOptions } from '../../app/job-queue.js';
import type { LogContextRunner } from '../logging/create-logger.js';
import { kyselyTransactionOf } from '../sql/timer-repository.js';

export interface PgBossJobQueueOptions {
  connectionString: string;
  /** pg-boss's own schema (see pgBossSchemaFor). */
  schema: string;
  logger: Logger;
  /** Each job runs in its own log context (its id), never in the context of whoever started the worker. */
  withLogContext?: LogContextRunner;
  /** How often an idle worker looks for due jobs; a delayed job waits at most this long past its due time. */
  pollingIntervalSeconds?: number;
  /** Jobs fetched per poll, and handlers per fetch run together. */
  batchSize?: number;
  /** Polling loops per queue in this process. */
  localConcurrency?: number;
  /** A handler that stops heartbeating (its process died) has its job handed out again after this. */
  heartbeatSeconds?: number;
  /** How often pg-boss looks for jobs to expire or retry (dead workers' jobs among them). */
  superviseIntervalSeconds?: number;
  retryLimit?: number;
  /** Connections pg-boss may open. */
  poolSize?: number;
}

/** Pending jobs outlive the longest follow-up delay (30 days) by a margin. */
const RETENTION_SECONDS = 40 * 24 * 3600;

/**
 * The job queue on PostgreSQL: pg-boss. Delayed jobs (`startAfter`), at most one
 * pending job per (queue, key) through the `short` queue policy and `singletonKey`,
 * `cancel`, and SKIP LOCKED fetching, so each job goes to one worker of one instance.
 * A job whose worker died stops heartbeating and is retried by pg-boss on another
 * instance; handlers are idempotent per key. No claim loop of our own here.
 */
export class PgBossJobQueue implements JobQueue {
  readonly #boss: PgBoss;
  readonly #logger: Logger;
  readonly #withLogContext: LogContextRunner;
  readonly #options: Required<Omit<PgBossJobQueueOptions, 'connectionString' | 'schema' | 'logger' | 'withLogContext'>>;
  readonly #handlers = new Map<string, JobHandler>();
  readonly #queues = new Map<string, Promise<void>>();
  #started: Promise<void> | undefined;
  #stopping: Promise<void> | undefined;

  constructor(options: PgBossJobQueueOptions) {
    this.#logger = options.logger.child({ component: 'job-queue' });
    this.#withLogContext = options.withLogContext ?? ((_fields, work) => work());
    this.#options = {
      pollingIntervalSeconds: options.pollingIntervalSeconds ?? 0.5,
      // 4 handlers at once per process: each holds a thread-lock connection for its run.
      batchSize: options.batchSize ?? 4,
      localConcurrency: options.localConcurrency ?? 1,
      heartbeatSeconds: options.heartbeatSeconds ?? 10,
      superviseIntervalSeconds: options.superviseIntervalSeconds ?? 5,
      retryLimit: options.retryLimit ?? 5,
      // Its queries are short (fetch, settle, heartbeat, upkeep): a few connections serve them.
      poolSize: options.poolSize ?? 3,
    };
    this.#boss = new PgBoss({
      connectionString: options.connectionString,
      schema: options.schema,
      max: this.#options.poolSize,
      superviseIntervalSeconds: this.#options.superviseIntervalSeconds,
      monitorIntervalSeconds: this.#options.superviseIntervalSeconds,
      application_name: 'vigil-jobs',
    });
    this.#boss.on('error', (error: unknown) => this.#logger.error({ err: error }, 'pg-boss error'));
    this.#boss.on('warning', (warning: unknown) => this.#logger.warn({ warning }, 'pg-boss warning'));
  }

  async schedule(job: ScheduleJob, options: ScheduleOptions = {}): Promise<{ id: string; created: boolean }> {
    await this.#ensureStarted();
    await this.#ensureQueue(job.queue);
    const db = options.within ? fromKysely(kyselyTransactionOf(options.within)) : undefined;
    const id = await this.#boss.send(job.queue, job.payload, { singletonKey: job.key, startAfter: job.dueAt, ...(db ? { db } : {}) });
    if (id) return { id, created: true };
    // The `short` policy kept the pending job of this key: answer its id.
    const existing = await this.#boss.findJobs(job.queue, { key: job.key, queued: true, ...(db ? { db } : {}) });
    return { id: existing[0]?.id ?? '', created: false };
  }

  async cancel(queue: string, key: string, options: ScheduleOptions = {}): Promise<boolean> {
    await this.#ensureStarted();
    await this.#ensureQueue(queue);
    const db = options.within ? fromKysely(kyselyTransactionOf(options.within)) : undefined;
    const queued = await this.#boss.findJobs(queue, { key, queued: true, ...(db ? { db } : {}) });
    if (queued.length === 0) return false;
    const result = (await this.#boss.cancel(queue, queued.map((job) => job.id), ...(db ? [{ db }] : []))) as { affected?: number };
    return (result.affected ?? queued.length) > 0;
  }

  /** From pg-boss's queue table (its counts are refreshed by its monitor, so they may lag a few seconds). */
  async depth(): Promise<QueueDepth> {
    if (!this.#started) return { ready: 0, deferred: 0, active: 0 };
    const queues = await this.#boss.getQueues([...this.#handlers.keys()]);
    return queues.reduce((sum, queue) => ({ ready: sum.ready + queue.readyCount, deferred: sum.deferred + queue.deferredCount, active: sum.active + queue.activeCount }), { ready: 0, deferred: 0, active: 0 });
  }

  async work(queue: string, handler: JobHandler): Promise<void> {
    if (this.#handlers.has(queue)) throw new Error(`queue "${queue}" already has a handler`);
    this.#handlers.set(queue, handler);
    if (this.#started && !this.#stopping) await this.#startWorker(queue, handler);
  }

  start(): Promise<void> {
    if (this.#stopping) return Promise.resolve();
    return (this.#started ??= (async () => {
      await this.#boss.start();
      for (const [queue, handler] of this.#handlers) await this.#startWorker(queue, handler);
      this.#logger.debug({ queues: [...this.#handlers.keys()] }, 'pg-boss job queue started');
    })());
  }

  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      if (!this.#started) return;
      await this.#started.catch(() => undefined);
      // Graceful: stop fetching, wait for handlers in flight, then close the pool.
      await this.#boss.stop({ graceful: true, timeout: 30_000 });
      this.#logger.debug('pg-boss job queue stopped');
    })();
    return this.#stopping;
  }

  /** Schedule and cancel work before start() too (start is idempotent and cheap once done). */
  async #ensureStarted(): Promise<void> {
    if (this.#stopping) throw new Error('the job queue is stopping');
    await this.start();
  }

  #ensureQueue(queue: string): Promise<void> {
    let ready = this.#queues.get(queue);
    if (!ready) {
      ready = this.#boss
        .createQueue(queue, {
          policy: 'short',
          retryLimit: this.#options.retryLimit,
          retryDelay: 1,
          retryBackoff: true,
          retryDelayMax: 60,
          // A run may take minutes (model timeouts and retries); the heartbeat, not this, detects a dead worker.
          expireInSeconds: 3600,
          heartbeatSeconds: this.#options.heartbeatSeconds,
          retentionSeconds: RETENTION_SECONDS,
          deleteAfterSeconds: 24 * 3600,
        })
        .catch((error: unknown) => {
          this.#queues.delete(queue);
          throw error;
        });
      this.#queues.set(queue, ready);
    }
    return ready;
  }

  async #startWorker(queue: string, handler: JobHandler): Promise<void> {
    await this.#ensureQueue(queue);
    await this.#boss.work(
      queue,
      {
        batchSize: this.#options.batchSize,
        localConcurrency: this.#options.localConcurrency,
        pollingIntervalSeconds: this.#options.pollingIntervalSeconds,
        burstWhenBatchFull: true,
        includeMetadata: true,
        perJobResults: true,
      },
      // Each job of a batch settles on its own: one failing handler does not fail the others.
      async (jobs: JobWithMetadata<object>[]): Promise<JobResult[]> =>
        Promise.all(
          jobs.map(async (job): Promise<JobResult> => {
            try {
              await this.#withLogContext({ jobId: job.id, queue }, () => handler(toDueJob(queue, job)));
              return { id: job.id, status: 'completed' };
            } catch (error) {
              this.#logger.warn({ err: error, jobId: job.id, queue, key: job.singletonKey, attempt: job.retryCount + 1 }, 'job failed; pg-boss retries it with backoff');
              return { id: job.id, status: 'failed', output: { message: error instanceof Error ? error.message : String(error) } };
            }
          }),
        ),
    );
  }
}

function toDueJob(queue: string, job: JobWithMetadata<object> | Job<object>): DueJob {
  const meta = job as JobWithMetadata<object>;
  return {
    id: job.id,
    queue,
    key: meta.singletonKey ?? '',
    dueAt: new Date(meta.startAfter ?? Date.now()).toISOString(),
    payload: (job.data ?? {}) as Record<string, unknown>,
    attempt: job.retryCount + 1,
  };
}

/**
 * pg-boss's schema beside vigil's: its tables (job, queue, schedule, version, …) would
 * otherwise share names with ours. pg-boss allows at most 50 bytes.
 */
export function pgBossSchemaFor(vigilSchema: string): string {
  const name = vigilSchema === 'public' ? 'vigil_pgboss' : `${vigilSchema}_pgboss`;
  if (name.length > 50) throw new Error(`PostgreSQL schema "${vigilSchema}" is too long to derive the job queue's schema (${name}); use at most 43 characters`);
  return name;
}
