import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Logger } from 'pino';
import type { InstancePresence } from '../../app/instance-presence.js';

/** First key of every presence lock: apart from thread locks ("vgl1"), roles ("vgl2"), the migrator's and pg-boss's. */
const PRESENCE_NAMESPACE = 0x76676c33; // "vgl3"

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
 * `pg_advisory_lock(namespace, hashtext(schema:id))` on a connection of its own, taken before
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
  #reconnect: NodeJS.Timeout | undefined;
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
    // Ending the session releases the lock.
    await client?.end().catch(() => undefined);
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
    try {
      await client.connect();
      await client.query('SELECT pg_advisory_lock($1, hashtext($2))', [PRESENCE_NAMESPACE, this.#key(this.id)]);
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
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
        () => this.#logger.info('the presence connection is back'),
        (error: unknown) => {
          this.#logger.warn({ err: error }, 'could not open the presence connection again; trying again');
          if (!this.#closed) this.#schedule();
        },
      );
    }, this.#options.retryMs ?? 1_000);
    this.#reconnect.unref();
  }
}
