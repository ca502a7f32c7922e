import { randomUUID } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import type { Logger } from 'pino';
import type { DueJob, JobHandler, JobQueue, QueueDepth, ScheduleJob, ScheduleOptions } from '../../app/job-queue.js';
import type { Clock } from '../../app/ports.js';
import type { LogContextRunner } from '../logging/create-logger.js';
import type { Database, SqlContext } from '../sql/database.js';
import { kyselyTransactionOf } from '../sql/timer-repository.js';
import { decodeJsonRecord, encodeJson, isoFromDatabase } from '../sql/values.js';
import { sql } from 'kysely';
import type { PostgresListener } from '../sql/postgres-listener.js';
import type { JobsTable, JobTables } from './jobs-table.js';

export interface EmbeddedJobQueueOptions {
  context: SqlContext;
  clock: Clock;
  logger: Logger;
  /** Each job runs in its own log context (its id), never in the context of whoever scheduled it. */
  withLogContext?: LogContextRunner;
  /** How long a claim lasts without renewal; a job whose process died is handed out again after it. */
  leaseMs?: number;
  /** Deliveries before a job that keeps failing is parked as failed. */
  maxAttempts?: number;
  /** Retry backoff: base × 2^(attempt-1), capped at a minute. */
  retryBaseMs?: number;
  /** Handlers running at once in this process, and the most jobs one claim hands out. */
  concurrency?: number;
  /**
   * PostgreSQL (several instances on one table): every change that may bring a due time
   * closer is announced by NOTIFY on the instance's shared listener, so every scheduler
   * wakes at once instead of at its backstop.
   */
  wakeUps?: { listener: PostgresListener; schema: string };
}

/** The NOTIFY channel of job wake-ups (payload: the schema). */
export const JOBS_CHANNEL = 'vigil_jobs';

type Db = Kysely<Database & JobTables>;
type JobRow = Selectable<JobsTable>;

/** setTimeout's ceiling; a longer sleep is taken in pieces. */
const MAX_SLEEP_MS = 2_147_483_647;
/**
 * A backstop for jobs another process wrote into the same SQLite file (this process
 * wakes on its own writes at once). It is a ceiling on sleep, not a poll interval: a
 * due job is still claimed at its due time.
 */
const FOREIGN_WRITE_BACKSTOP_MS = 60_000;
/** On PostgreSQL other instances' writes are announced; the backstop only covers a lost notice. */
const NOTIFIED_BACKSTOP_MS = 5_000;
const MAX_RETRY_DELAY_MS = 60_000;

/**
 * The job queue on one machine: jobs in the `vigil_jobs` table of the SQLite database,
 * and one scheduler that sleeps until the next due time (or lease expiry) and wakes
 * whenever this process schedules, cancels or finishes a job — no fixed poll.
 *
 * Due jobs are handed out in batches, up to the free handler slots, by one conditional
 * UPDATE (pending/expired → active, with this worker's id and a lease), so two schedulers
 * — even in two processes on one file — never both claim one; the rows of jobs that
 * finished together are deleted together. A burst of jobs due at once thus costs two
 * writes per batch, not two per job (on SQLite each write outside a transaction is a
 * commit). A claim is renewed while its handler runs; a job whose process died is handed
 * out again once its lease lapses (so handlers are idempotent per key). Jobs that came
 * due while nothing ran are claimed right after start.
 */
export class EmbeddedJobQueue implements JobQueue {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #leaseMs: number;
  readonly #maxAttempts: number;
  readonly #retryBaseMs: number;
  readonly #concurrency: number;
  readonly #withLogContext: LogContextRunner;
  readonly #workerId = randomUUID();
  readonly #handlers = new Map<string, JobHandler>();
  readonly #inFlight = new Map<string, Promise<void>>();
  readonly #finished: Array<{ row: JobRow; resolve: () => void; reject: (error: unknown) => void }> = [];
  #started = false;
  #stopping: Promise<void> | undefined;
  #sleep: NodeJS.Timeout | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  #pumping = false;
  #wakeUpSet = false;
  #pumpAgain = false;
  readonly #postgres: boolean;
  readonly #wakeUps: EmbeddedJobQueueOptions['wakeUps'];
  #stopListening: (() => void) | undefined;

  constructor(options: EmbeddedJobQueueOptions) {
    this.#postgres = options.context.dialect === 'postgres';
    if (this.#postgres && !options.wakeUps) throw new Error('the job table on PostgreSQL needs its NOTIFY wake-ups (several instances share it)');
    this.#wakeUps = options.wakeUps;
    this.#db = options.context.db.withTables<JobTables>();
    this.#clock = options.clock;
    this.#logger = options.logger.child({ component: 'job-queue' });
    this.#leaseMs = options.leaseMs ?? 5_000;
    this.#maxAttempts = options.maxAttempts ?? 10;
    this.#retryBaseMs = options.retryBaseMs ?? 1_000;
    this.#concurrency = options.concurrency ?? 4;
    this.#withLogContext = options.withLogContext ?? ((_fields, work) => work());
  }

  async schedule(job: ScheduleJob, options: ScheduleOptions = {}): Promise<{ id: string; created: boolean }> {
    const db: Db = options.within ? kyselyTransactionOf(options.within).withTables<JobTables>() : this.#db;
    const now = this.#now();
    const id = randomUUID();
    const inserted = await db
      .insertInto('vigil_jobs')
      .values({
        id,
        queue: job.queue,
        key: job.key,
        due_at: job.dueAt.toISOString(),
        payload: encodeJson(job.payload),
        state: 'pending',
        attempt: 0,
        lease_until: null,
        claimed_by: null,
        last_error: null,
        created_at: now,
        updated_at: now,
      })
      // The partial unique index on (queue, key) of pending jobs: an existing one is kept.
      .onConflict((conflict) => conflict.doNothing())
      .returning('id')
      .executeTakeFirst();
    if (inserted !== undefined) await this.#announce(db); // within the caller's transaction: heard at its commit
    this.#wakeSoon();
    if (inserted !== undefined) return { id, created: true };
    const existing = await db
      .selectFrom('vigil_jobs')
      .select('id')
      .where('queue', '=', job.queue)
      .where('key', '=', job.key)
      .where('state', '=', 'pending')
      .executeTakeFirst();
    return { id: existing?.id ?? id, created: false };
  }

  async cancel(queue: string, key: string, options: ScheduleOptions = {}): Promise<boolean> {
    const db: Db = options.within ? kyselyTransactionOf(options.within).withTables<JobTables>() : this.#db;
    const result = await db.deleteFrom('vigil_jobs').where('queue', '=', queue).where('key', '=', key).where('state', '=', 'pending').executeTakeFirst();
    this.#wakeSoon();
    return Number(result.numDeletedRows) > 0;
  }

  /** The jobs of the queues this scheduler works (as pg-boss counts): another scheduler on the same table counts its own. */
  async depth(): Promise<QueueDepth> {
    const queues = [...this.#handlers.keys()];
    if (queues.length === 0) return { ready: 0, deferred: 0, active: 0 };
    const now = this.#now();
    const rows = await this.#db
      .selectFrom('vigil_jobs')
      .where('queue', 'in', queues)
      .select((eb) => [
        eb.fn.countAll<number>().filterWhere((inner) => inner.and([inner('state', '=', 'pending'), inner('due_at', '<=', now)])).as('ready'),
        eb.fn.countAll<number>().filterWhere((inner) => inner.and([inner('state', '=', 'pending'), inner('due_at', '>', now)])).as('deferred'),
        eb.fn.countAll<number>().filterWhere('state', '=', 'active').as('active'),
      ])
      .executeTakeFirst();
    return { ready: Number(rows?.ready ?? 0), deferred: Number(rows?.deferred ?? 0), active: Number(rows?.active ?? 0) };
  }

  async work(queue: string, handler: JobHandler): Promise<void> {
    this.#handlers.set(queue, handler);
    this.#wakeSoon();
  }

  async start(): Promise<void> {
    if (this.#started || this.#stopping) return;
    this.#started = true;
    if (this.#wakeUps) {
      const schema = this.#wakeUps.schema;
      const wake = () => this.#wakeSoon();
      this.#stopListening = await this.#wakeUps.listener.listen(JOBS_CHANNEL, (payload) => payload === schema && wake(), wake);
    }
    this.#logger.debug({ workerId: this.#workerId }, 'embedded job scheduler started');
    await this.#pump();
  }

  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      this.#clearSleep();
      this.#stopListening?.();
      // Handlers in flight finish (the run coordinator aborts their runs on shutdown);
      // a handler that fails because of it leaves its job pending for the next start.
      while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight.values()]);
      if (this.#heartbeat) clearInterval(this.#heartbeat);
      this.#heartbeat = undefined;
      this.#logger.debug('embedded job scheduler stopped');
    })();
    return this.#stopping;
  }

  /** Jobs this process is running now (for tests and shutdown logs). */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  #active(): boolean {
    return this.#started && !this.#stopping;
  }

  #wakeSoon(): void {
    if (!this.#active()) return;
    // After the caller's transaction commits: on SQLite the read waits for the connection anyway.
    // The pump (and the sleep timer it sets) must not carry the log context of the request
    // or run that scheduled a job: every job after it would be logged with that id.
    // One wake-up however many asked before it ran (a batch of jobs finishing together).
    if (this.#wakeUpSet) return;
    this.#wakeUpSet = true;
    setImmediate(() => {
      this.#wakeUpSet = false;
      this.#withLogContext({}, () => void this.#pump());
    });
  }

  /** Claim what is due, deliver it, then sleep until the next due time. Never runs twice at once. */
  async #pump(): Promise<void> {
    if (this.#pumping) {
      this.#pumpAgain = true;
      return;
    }
    this.#pumping = true;
    try {
      do {
        this.#pumpAgain = false;
        if (!this.#active()) return;
        const capacity = this.#concurrency - this.#inFlight.size;
        if (capacity > 0 && this.#handlers.size > 0) {
          const claimed = await this.#claim(capacity);
          for (const row of claimed) this.#deliver(row);
          if (claimed.length === capacity) this.#pumpAgain = true; // there may be more due
        }
        if (!this.#pumpAgain) await this.#sleepUntilNext();
      } while (this.#pumpAgain);
    } catch (error) {
      this.#logger.error({ err: error }, 'job scheduler pass failed; trying again in a second');
      this.#sleepFor(1_000);
    } finally {
      this.#pumping = false;
    }
  }

  async #claim(limit: number): Promise<JobRow[]> {
    const queues = [...this.#handlers.keys()];
    const now = this.#now();
    const leaseUntil = new Date(this.#clock.now().getTime() + this.#leaseMs).toISOString();
    const claimed: JobRow[] = [];
    // Due pending jobs first, then jobs whose claim lapsed (their process died). Each is
    // one conditional UPDATE: the row's state moves only if it still is what we read.
    for (const lapsed of [false, true]) {
      const room = limit - claimed.length;
      if (room <= 0) break;
      const rows = await this.#db
        .updateTable('vigil_jobs')
        .set((eb) => ({ state: 'active', attempt: eb('attempt', '+', 1), claimed_by: this.#workerId, lease_until: leaseUntil, updated_at: now }))
        .where('id', 'in', lapsed ? this.#lapsedIds(queues, now, room) : this.#oldestDueIds(queues, now, room))
        .$call((query) => (lapsed ? query.where('state', '=', 'active').where('lease_until', '<=', now) : query.where('state', '=', 'pending').where('due_at', '<=', now)))
        .returningAll()
        .execute();
      if (lapsed && rows.length > 0) this.#logger.warn({ jobs: rows.map((row) => ({ id: row.id, queue: row.queue, key: row.key, attempt: row.attempt })) }, 'jobs whose claim lapsed (their process ended mid-job) are handed out again');
      claimed.push(...rows);
    }
    return claimed;
  }

  /**
   * The ids of the `room` pending jobs due first across `queues`: the oldest of the first
   * `room` of each queue's range of the (queue, due_at) index. `queue IN (…) ORDER BY
   * due_at` cannot be read from that index in order, so SQLite would sort every due job of
   * every queue at each claim: a cost that grows with the backlog, paid at every batch.
   */
  #oldestDueIds(queues: string[], now: string, room: number) {
    const oldestOf = (queue: string, index: number) => {
      const oldest = this.#db.selectFrom('vigil_jobs').select(['id', 'due_at']).where('queue', '=', queue).where('state', '=', 'pending').where('due_at', '<=', now).orderBy('due_at').limit(room);
      // Several instances claim at once: each skips the rows another is claiming instead of queueing behind it.
      return this.#db.selectFrom((this.#postgres ? oldest.forUpdate().skipLocked() : oldest).as(`queue_${index}`)).select(['id', 'due_at']);
    };
    const [first, ...others] = queues.map(oldestOf);
    // Ordered outside the UNION ALL: one sort of the few rows it gives (ordering the compound itself makes SQLite sort each part to merge them).
    return this.#db.selectFrom(others.reduce((union, next) => union.unionAll(next), first!).as('due')).select('id').orderBy('due_at').limit(room);
  }

  /** The ids of the `room` jobs whose claim lapsed longest ago (a few: only jobs in flight are active). */
  #lapsedIds(queues: string[], now: string, room: number) {
    const lapsed = this.#db.selectFrom('vigil_jobs').select('id').where('queue', 'in', queues).where('state', '=', 'active').where('lease_until', '<=', now).orderBy('lease_until').limit(room);
    return this.#postgres ? lapsed.forUpdate().skipLocked() : lapsed;
  }

  #deliver(row: JobRow): void {
    const handler = this.#handlers.get(row.queue);
    if (!handler) return; // unreachable: only registered queues are claimed
    const job: DueJob = { id: row.id, queue: row.queue, key: row.key, dueAt: isoFromDatabase(row.due_at as Date | string), payload: decodeJsonRecord(row.payload), attempt: row.attempt };
    const delivery = (async () => {
      try {
        await this.#withLogContext({ jobId: job.id, queue: job.queue }, () => handler(job));
        await this.#forget(row);
      } catch (error) {
        await this.#fail(row, error);
      }
    })()
      .catch((error: unknown) => this.#logger.error({ err: error, jobId: row.id }, 'could not settle a job'))
      .finally(() => {
        this.#inFlight.delete(row.id);
        if (this.#inFlight.size === 0 && this.#heartbeat) {
          clearInterval(this.#heartbeat);
          this.#heartbeat = undefined;
        }
        this.#wakeSoon();
      });
    this.#inFlight.set(row.id, delivery);
    this.#heartbeat ??= setInterval(() => void this.#renewLeases(), Math.max(50, Math.floor(this.#leaseMs / 3))).unref();
  }

  /**
   * Deletes a finished job's row, together with every other job that finished in the same
   * turn of the event loop: one write per batch instead of one per job, which is most of a
   * burst's cost on SQLite (each statement outside a transaction is its own commit). The
   * delivery stays in flight (its claim held, and renewed) until its row is gone; a crash
   * before that hands the job out again, as a crash just after its handler always could.
   */
  #forget(row: JobRow): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.#finished.push({ row, resolve, reject }) === 1) setImmediate(() => void this.#forgetFinished());
    });
  }

  async #forgetFinished(): Promise<void> {
    const batch = this.#finished.splice(0);
    try {
      await this.#db
        .deleteFrom('vigil_jobs')
        .where('claimed_by', '=', this.#workerId)
        // Only the delivery that finished: a lapsed claim handed out again has a higher attempt.
        .where((eb) => eb.or(batch.map(({ row }) => eb.and([eb('id', '=', row.id), eb('attempt', '=', row.attempt)]))))
        .execute();
      for (const finished of batch) finished.resolve();
    } catch (error) {
      for (const finished of batch) finished.reject(error);
    }
  }

  async #fail(row: JobRow, error: unknown): Promise<void> {
    const message = error instanceof Error ? error.message : String(error);
    const now = this.#now();
    const last = row.attempt >= this.#maxAttempts;
    const delayMs = Math.min(MAX_RETRY_DELAY_MS, this.#retryBaseMs * 2 ** (row.attempt - 1));
    if (last) this.#logger.error({ jobId: row.id, queue: row.queue, key: row.key, attempt: row.attempt, err: error }, 'job failed for the last time; parked as failed');
    else this.#logger.warn({ jobId: row.id, queue: row.queue, key: row.key, attempt: row.attempt, retryInMs: delayMs, err: error }, 'job failed; it will be retried');
    const settle = last
      ? { state: 'failed' as const, last_error: message, claimed_by: null, lease_until: null, updated_at: now }
      : { state: 'pending' as const, due_at: new Date(this.#clock.now().getTime() + delayMs).toISOString(), last_error: message, claimed_by: null, lease_until: null, updated_at: now };
    try {
      // Only while this worker still holds this delivery's claim.
      await this.#db.updateTable('vigil_jobs').set(settle).where('id', '=', row.id).where('claimed_by', '=', this.#workerId).where('attempt', '=', row.attempt).execute();
      if (!last) await this.#announce(this.#db);
    } catch (updateError) {
      // A newer pending job with the same key exists (the handler rescheduled it): that one stands.
      if (!String((updateError as Error)?.message).includes('UNIQUE') && (updateError as { code?: string })?.code !== '23505') throw updateError;
      await this.#db.deleteFrom('vigil_jobs').where('id', '=', row.id).where('claimed_by', '=', this.#workerId).execute();
    }
  }

  async #renewLeases(): Promise<void> {
    try {
      await this.#db
        .updateTable('vigil_jobs')
        .set({ lease_until: new Date(this.#clock.now().getTime() + this.#leaseMs).toISOString() })
        .where('state', '=', 'active')
        .where('claimed_by', '=', this.#workerId)
        .execute();
    } catch (error) {
      this.#logger.warn({ err: error }, 'could not renew job leases');
    }
  }

  async #sleepUntilNext(): Promise<void> {
    const queues = [...this.#handlers.keys()];
    if (queues.length === 0 || this.#inFlight.size >= this.#concurrency) {
      this.#clearSleep(); // a registration or a finished handler wakes us
      return;
    }
    // min() per queue: SQLite answers each from the end of the (queue, due_at) index.
    const due = await Promise.all(
      queues.map((queue) => this.#db.selectFrom('vigil_jobs').select((eb) => eb.fn.min('due_at').as('at')).where('state', '=', 'pending').where('queue', '=', queue).executeTakeFirst()),
    );
    // Only its own queues' claims: another scheduler on the same table renews and settles its own.
    const lease = await this.#db.selectFrom('vigil_jobs').select((eb) => eb.fn.min('lease_until').as('at')).where('state', '=', 'active').where('queue', 'in', queues).executeTakeFirst();
    const times = ([...due.map((row) => row?.at), lease?.at] as unknown[])
      .filter((value): value is string | Date => typeof value === 'string' || value instanceof Date)
      .map((value) => Date.parse(isoFromDatabase(value)));
    const next = times.length > 0 ? Math.min(...times) : Number.POSITIVE_INFINITY;
    this.#sleepFor(Math.min(this.#postgres ? NOTIFIED_BACKSTOP_MS : FOREIGN_WRITE_BACKSTOP_MS, Math.max(0, next - this.#clock.now().getTime())));
  }

  #sleepFor(milliseconds: number): void {
    this.#clearSleep();
    if (!this.#active()) return;
    this.#sleep = setTimeout(() => void this.#pump(), Math.min(MAX_SLEEP_MS, milliseconds)).unref();
  }

  #clearSleep(): void {
    if (this.#sleep) clearTimeout(this.#sleep);
    this.#sleep = undefined;
  }

  /** Tell every instance's scheduler to look again (PostgreSQL; in a transaction, heard when it commits). */
  async #announce(db: Db): Promise<void> {
    if (this.#wakeUps) await sql`SELECT pg_notify(${JOBS_CHANNEL}, ${this.#wakeUps.schema})`.execute(db);
  }

  #now(): string {
    return this.#clock.now().toISOString();
  }
}
