import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Logger } from 'pino';
import type { InstancePresence } from '../../app/instance-presence.js';

/** First key of every presence lock: apart from thread locks ("vgl1"), roles ("vgl2"), the migrator's and pg-boss's. */
export const PRESENCE_NAMESPACE = 0x76676c33; // "vgl3"

export interface PostgresInstancePresenceOptions {
  connectionString: string;
  /** vigil's schema: processes of deployments in other schemas are not asked about. */
  schema: string;
  logger: Logger;
  /** How soon a lost presence connection is opened again (default 1 s). */
  retryMs?: number;
  /** Names the connection in pg_stat_activity. */
  instanceId?: string;
}

/**
 * A process is present while it holds the session advisory lock
 * `(namespace, hashtext(schema:id))` (pg_try_advisory_lock) on a connection of its own, taken before
 * it serves anything and held until it stops. A process that dies (kill -9, a crash) loses its
 * session and PostgreSQL releases the lock; another asks with `pg_try_advisory_xact_lock`,
 * which takes a free lock only for its own statement. Should the connection break while the
 * process lives, it is opened again (and the lock taken again) within `retryMs`; meanwhile
 * others may judge this process gone, so what they end on that judgement must be ended by a
 * conditional write its owner also checks (the protocol run's claim).
 */
export class PostgresInstancePresence implements InstancePresence {
  readonly id = randomUUID();
  readonly #options: PostgresInstancePresenceOptions;
  readonly #logger: Logger;
  #client: pg.Client | undefined;
  /** A connection being opened (or waiting for its lock), not yet #client: close ends it too. */
  #connecting: pg.Client | undefined;
  #reconnect: NodeJS.Timeout | undefined;
  /** Reopens failed in a row: the lock can stay refused for as long as the old session lingers. */
  #failedReopens = 0;
  #closed = false;

  private constructor(options: PostgresInstancePresenceOptions) {
    this.#options = options;
    this.#logger = options.logger.child({ component: 'instance-presence' });
  }

  /** Present once this resolves: nothing it owns is written before. */
  static async open(options: PostgresInstancePresenceOptions): Promise<PostgresInstancePresence> {
    const presence = new PostgresInstancePresence(options);
    await presence.#connect();
    return presence;
  }

  async isAlive(id: string | null): Promise<boolean> {
    // Written by a server before owners were recorded: perhaps an older instance still running.
    if (id === null || id === this.id) return true;
    const client = this.#client;
    if (client === undefined) return true; // no answer now: not judged
    try {
      const result = await client.query<{ free: boolean }>('SELECT pg_try_advisory_xact_lock($1, hashtext($2)) AS free', [PRESENCE_NAMESPACE, this.#key(id)]);
      return result.rows[0]?.free !== true;
    } catch (error) {
      this.#logger.warn({ err: error }, 'could not ask whether a process is still running; taken as running');
      return true;
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#reconnect);
    const client = this.#client;
    this.#client = undefined;
    // Ending the session releases the lock. One still being opened is ended as well: its
    // pg_advisory_lock may wait (behind the old session, until the server ends it) for as
    // long as the database takes, keeping a connection, and the process, open meanwhile.
    const connecting = this.#connecting;
    this.#connecting = undefined;
    await Promise.all([client?.end().catch(() => undefined), connecting?.end().catch(() => undefined)]);
  }

  #key(id: string): string {
    return `${this.#options.schema}:${id}`;
  }

  async #connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.#options.connectionString, application_name: `vigil-presence ${this.#options.instanceId ?? ''}`.trim() });
    const lost = () => {
      if (this.#client !== client) return;
      this.#client = undefined;
      if (this.#closed) return;
      this.#logger.warn('the presence connection was lost: other instances may take this one for gone until it is back');
      this.#schedule();
    };
    client.on('error', lost);
    client.on('end', lost);
    this.#connecting = client;
    try {
      await client.connect();
      // Tried, never waited for: after a break only the client may have noticed, the old
      // session can hold the lock until the server ends it, and a connection waiting behind
      // it would outlive close (a backend waiting for a lock does not see its client go).
      // Taken, the process is present again; refused, it is tried again in retryMs.
      const taken = await client.query<{ taken: boolean }>('SELECT pg_try_advisory_lock($1, hashtext($2)) AS taken', [PRESENCE_NAMESPACE, this.#key(this.id)]);
      if (taken.rows[0]?.taken !== true) throw new Error('the presence lock is still held (by the session that was lost, or by a process asking about this one)');
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    } finally {
      if (this.#connecting === client) this.#connecting = undefined;
    }
    if (this.#closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.#client = client;
  }

  #schedule(): void {
    clearTimeout(this.#reconnect);
    this.#reconnect = setTimeout(() => {
      this.#connect().then(
        () => {
          this.#failedReopens = 0;
          if (!this.#closed) this.#logger.info('the presence connection is back');
        },
        (error: unknown) => {
          if (this.#closed) return; // ended by close
          // Said once, then once a minute or so (at retryMs 1 s), not at every try.
          this.#failedReopens += 1;
          const level = this.#failedReopens % 60 === 1 ? 'warn' : 'debug';
          this.#logger[level]({ err: error, attempts: this.#failedReopens }, 'could not open the presence connection again; trying again');
          this.#schedule();
        },
      );
    }, this.#options.retryMs ?? 1_000);
    this.#reconnect.unref();
  }
}
