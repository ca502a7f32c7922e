import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Logger } from 'pino';
import { z } from 'zod';
import { InProcessThreadLocks, type ThreadLease, type ThreadLockService, untilCalledOff } from '../../app/thread-lock.js';
import { PostgresListener } from '../sql/postgres-listener.js';

/** First key of every thread lock: keeps them apart from other advisory locks (the migrator's, pg-boss's). */
export const LOCK_NAMESPACE = 0x76676c31; // "vgl1"
const YIELD_CHANNEL = 'vigil_thread_yield';
/** A yield request is honoured by leases granted up to this long after it was sent (clock skew between instances). */
const YIELD_SKEW_MS = 2_000;

/** Clients that already have their error listener (pool clients are reused). */
const LISTENING = new WeakSet<pg.PoolClient>();

const yieldNoticeSchema = z.object({ schema: z.string(), threadId: z.string(), at: z.number(), instance: z.string() }).strict();

export interface PostgresThreadLocksOptions {
  connectionString: string;
  /** vigil's schema: locks and yield requests of other schemas on the same database are separate. */
  schema: string;
  logger: Logger;
  /** Connections for held locks: one per thread running on this instance at once. */
  poolSize?: number;
  /** The instance's shared LISTEN connection; without one the locks open (and close) their own. */
  listener?: PostgresListener;
}

/**
 * One run at a time per thread across instances: a session advisory lock
 * `pg_advisory_lock(namespace, hashtext(schema:thread))` taken on a dedicated
 * connection and held for the whole run, behind this process's own FIFO (so local
 * waiters queue in memory, not on connections). If the instance dies its session ends
 * and PostgreSQL releases the lock.
 *
 * Yield requests (a person's message pre-empting an autonomous run) go to the holder
 * wherever it runs: locally at once, and to other instances by NOTIFY on a channel
 * every instance LISTENs to.
 */
export class PostgresThreadLocks implements ThreadLockService {
  readonly #local = new InProcessThreadLocks();
  readonly #pool: pg.Pool;
  readonly #options: PostgresThreadLocksOptions;
  readonly #logger: Logger;
  readonly #instance = randomUUID();
  #listener: PostgresListener | undefined;
  #ownsListener = false;
  #stopListening: (() => void) | undefined;
  #closed = false;

  private constructor(options: PostgresThreadLocksOptions) {
    this.#options = options;
    this.#logger = options.logger.child({ component: 'thread-locks' });
    // Idle lock connections go back quickly: each is held only for a run, and PostgreSQL's
    // connection limit is shared with the other pools and instances.
    this.#pool = new pg.Pool({ connectionString: options.connectionString, max: options.poolSize ?? 10, idleTimeoutMillis: 1_000, application_name: this.applicationName });
    this.#pool.on('error', (error) => this.#logger.warn({ err: error }, 'a thread-lock connection was lost; its lock is released by PostgreSQL'));
  }

  /** How this instance's lock connections are named in pg_stat_activity (which instance holds what). */
  get applicationName(): string {
    return `vigil-thread-locks ${this.#instance.slice(0, 8)}`;
  }

  static async open(options: PostgresThreadLocksOptions): Promise<PostgresThreadLocks> {
    const locks = new PostgresThreadLocks(options);
    try {
      await locks.#listen();
    } catch (error) {
      await locks.close();
      throw error;
    }
    return locks;
  }

  async acquire(threadId: string, signal?: AbortSignal): Promise<ThreadLease> {
    return untilCalledOff(this.#acquire(threadId, signal), signal);
  }

  async #acquire(threadId: string, signal: AbortSignal | undefined): Promise<ThreadLease> {
    const local = await this.#local.acquire(threadId, signal);
    try {
      signal?.throwIfAborted();
      const client = await this.#connect();
      try {
        await this.#waitForLock(client, threadId, signal);
      } catch (error) {
        // Dropping the connection ends its session: a lock granted as the wait was called off goes with it.
        client.release(error as Error);
        throw error;
      }
      return this.#lease(threadId, local, client);
    } catch (error) {
      await local.release();
      throw error;
    }
  }

  /**
   * `pg_advisory_lock` on the lease's connection. While another instance holds the thread
   * the statement waits in PostgreSQL; called off meanwhile (a cancelled run, a stopping
   * server), the wait is cancelled there, so the connection comes back and a stop does not
   * wait for the other instance's run.
   */
  async #waitForLock(client: pg.PoolClient, threadId: string, signal: AbortSignal | undefined): Promise<void> {
    const locking = client.query('SELECT pg_advisory_lock($1, hashtext($2))', [LOCK_NAMESPACE, this.#key(threadId)]);
    if (signal === undefined) {
      await locking;
      return;
    }
    let cancelling: Promise<void> | undefined;
    const cancel = () => {
      cancelling = this.#cancelStatement(backendPid(client));
    };
    if (signal.aborted) cancel();
    else signal.addEventListener('abort', cancel, { once: true });
    try {
      await locking;
    } catch (error) {
      throw signal.aborted ? signal.reason : error;
    } finally {
      signal.removeEventListener('abort', cancel);
      // Landed before the connection runs anything else: a late cancel would hit that statement.
      await cancelling;
    }
    // Granted just as it was called off.
    signal.throwIfAborted();
  }

  /** Cancels what a lock connection's backend runs now (its wait), from a connection of its own: the pool's may all be waiting. */
  async #cancelStatement(pid: number | undefined): Promise<void> {
    if (pid === undefined) {
      this.#logger.warn('could not call off a wait for a thread lock (its backend is unknown); its connection returns once the lock is granted');
      return;
    }
    const admin = new pg.Client({ connectionString: this.#options.connectionString, application_name: this.applicationName });
    admin.on('error', () => undefined);
    try {
      await admin.connect();
      await admin.query('SELECT pg_cancel_backend($1)', [pid]);
    } catch (error) {
      this.#logger.warn({ err: error }, 'could not call off a wait for a thread lock; its connection returns once the lock is granted');
    } finally {
      await admin.end().catch(() => undefined);
    }
  }

  async tryAcquire(threadId: string): Promise<ThreadLease | undefined> {
    const local = await this.#local.tryAcquire(threadId);
    if (!local) return undefined;
    try {
      const client = await this.#connect();
      let locked = false;
      try {
        const result = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1, hashtext($2)) AS locked', [LOCK_NAMESPACE, this.#key(threadId)]);
        locked = result.rows[0]?.locked === true;
      } catch (error) {
        client.release(error as Error);
        throw error;
      }
      if (!locked) {
        client.release();
        await local.release();
        return undefined;
      }
      return this.#lease(threadId, local, client);
    } catch (error) {
      await local.release();
      throw error;
    }
  }

  async requestYield(threadId: string): Promise<void> {
    const at = Date.now();
    this.#local.yieldHolder(threadId, Number.POSITIVE_INFINITY);
    const notice = JSON.stringify({ schema: this.#options.schema, threadId, at, instance: this.#instance });
    try {
      await this.#pool.query('SELECT pg_notify($1, $2)', [YIELD_CHANNEL, notice]);
    } catch (error) {
      // The person's run still waits for the lock: it is answered, only later.
      this.#logger.warn({ err: error, threadId }, 'could not ask other instances to yield the thread');
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#stopListening?.();
    if (this.#ownsListener) await this.#listener?.close();
    await this.#pool.end();
  }

  /**
   * A connection of our own for the lock. A checked-out pg client that loses its
   * connection emits 'error' on itself (not the pool): unheard, that would end the
   * process. The lock went with the session; the run is already past the point where
   * that matters (it holds the in-process lock too), so a warning is enough.
   */
  async #connect(): Promise<pg.PoolClient> {
    const client = await this.#pool.connect();
    if (!LISTENING.has(client)) {
      LISTENING.add(client);
      client.on('error', (error) => this.#logger.warn({ err: error }, 'a thread-lock connection was lost; PostgreSQL released its lock'));
    }
    return client;
  }

  #key(threadId: string): string {
    return `${this.#options.schema}:${threadId}`;
  }

  #lease(threadId: string, local: ThreadLease, client: pg.PoolClient): ThreadLease {
    let released = false;
    return {
      yieldRequested: local.yieldRequested,
      release: async () => {
        if (released) return;
        released = true;
        try {
          await client.query('SELECT pg_advisory_unlock($1, hashtext($2))', [LOCK_NAMESPACE, this.#key(threadId)]);
          client.release();
        } catch (error) {
          // Destroying the connection ends its session, which releases the lock.
          this.#logger.warn({ err: error, threadId }, 'could not unlock a thread; dropping its connection instead');
          client.release(error as Error);
        } finally {
          await local.release();
        }
      },
    };
  }

  async #listen(): Promise<void> {
    if (this.#options.listener) this.#listener = this.#options.listener;
    else {
      this.#listener = await PostgresListener.open(this.#options.connectionString, this.#logger);
      this.#ownsListener = true;
    }
    this.#stopListening = await this.#listener.listen(YIELD_CHANNEL, (payload) => this.#onNotice(payload));
  }

  #onNotice(payload: string | undefined): void {
    let notice: z.infer<typeof yieldNoticeSchema>;
    try {
      notice = yieldNoticeSchema.parse(JSON.parse(payload ?? ''));
    } catch {
      this.#logger.warn({ payload }, 'ignored a malformed thread-yield notice');
      return;
    }
    // Our own notices were handled locally; other schemas are other deployments.
    if (notice.instance === this.#instance || notice.schema !== this.#options.schema) return;
    if (this.#local.yieldHolder(notice.threadId, notice.at + YIELD_SKEW_MS)) this.#logger.debug({ threadId: notice.threadId }, 'yielding a thread to a person on another instance');
  }
}

/** The backend process of a connection, which node-postgres keeps from the server's key data (not in its type declarations). */
function backendPid(client: pg.PoolClient): number | undefined {
  const pid = (client as unknown as { processID?: unknown }).processID;
  return typeof pid === 'number' ? pid : undefined;
}
