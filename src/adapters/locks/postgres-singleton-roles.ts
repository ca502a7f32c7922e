import pg from 'pg';
import type { Logger } from 'pino';
import type { RoleLease, SingletonRoles } from '../../app/singleton-role.js';

/** First key of every role lock: apart from thread locks ("vgl1"), the migrator's and pg-boss's. */
const ROLE_NAMESPACE = 0x76676c32; // "vgl2"

export interface PostgresSingletonRolesOptions {
  connectionString: string;
  /** vigil's schema: deployments in other schemas of the same database hold their own roles. */
  schema: string;
  logger: Logger;
  /** How often a waiting instance tries the lock (default 1 s): the take-over time after a holder dies. */
  retryMs?: number;
  /** Names the role connections in pg_stat_activity. */
  instanceId?: string;
}

/**
 * A role is a session advisory lock `pg_try_advisory_lock(namespace, hashtext(schema:role))`
 * on a connection of its own, held as long as the work goes on. A holder that dies (kill -9,
 * lost network) loses its session and PostgreSQL releases the lock; the instances waiting
 * try every `retryMs` and one of them takes over. A holder whose connection breaks (while
 * its process lives) is told through `lost` and stops the work; the new holder may start
 * while the old one is noticing, so the work must tolerate a short overlap (grammY retries
 * Telegram's 409 for a second poller).
 */
export class PostgresSingletonRoles implements SingletonRoles {
  readonly #options: PostgresSingletonRolesOptions;
  readonly #logger: Logger;
  readonly #held = new Map<string, pg.Client>();
  #closed = false;

  constructor(options: PostgresSingletonRolesOptions) {
    this.#options = options;
    this.#logger = options.logger.child({ component: 'singleton-roles' });
  }

  async acquire(role: string, signal: AbortSignal): Promise<RoleLease | undefined> {
    if (this.#held.has(role)) throw new Error(`role ${role} is already held by this instance`);
    const retryMs = this.#options.retryMs ?? 1_000;
    // One connection, kept while waiting and while holding: a waiting instance retries on it
    // instead of opening a connection a second (PostgreSQL's connection limit is shared).
    let client: pg.Client | undefined;
    let lost: AbortController | undefined;
    while (!signal.aborted && !this.#closed) {
      try {
        if (!client || lost?.signal.aborted) {
          await client?.end().catch(() => undefined);
          ({ client, lost } = await this.#connect(role));
        }
        const result = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1, hashtext($2)) AS locked', [ROLE_NAMESPACE, `${this.#options.schema}:${role}`]);
        if (result.rows[0]?.locked === true && !this.#closed && !signal.aborted) return this.#lease(role, client, lost!);
        if (result.rows[0]?.locked === true) break; // closing: ending the session below releases it
      } catch (error) {
        this.#logger.warn({ err: error, role }, 'could not try a role lock; trying again');
        await client?.end().catch(() => undefined);
        client = undefined;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, retryMs);
        function done() {
          clearTimeout(timer);
          signal.removeEventListener('abort', done);
          resolve();
        }
        signal.addEventListener('abort', done, { once: true });
      });
    }
    await client?.end().catch(() => undefined);
    return undefined;
  }

  held(): string[] {
    return [...this.#held.keys()].sort();
  }

  async close(): Promise<void> {
    this.#closed = true;
    const clients = [...this.#held.values()];
    this.#held.clear();
    await Promise.all(clients.map((client) => client.end().catch(() => undefined)));
  }

  async #connect(role: string): Promise<{ client: pg.Client; lost: AbortController }> {
    const client = new pg.Client({ connectionString: this.#options.connectionString, application_name: `vigil-role ${role} ${this.#options.instanceId ?? ''}`.trim() });
    const lost = new AbortController();
    client.on('error', (error) => {
      if (!lost.signal.aborted && this.#held.get(role) === client) this.#logger.warn({ err: error, role }, 'the connection holding a role broke: the role is lost');
      lost.abort(error);
    });
    client.on('end', () => lost.abort(new Error('the role connection ended')));
    try {
      await client.connect();
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    return { client, lost };
  }

  #lease(role: string, client: pg.Client, lost: AbortController): RoleLease {
    this.#held.set(role, client);
    this.#logger.info({ role }, 'this instance holds the role');
    let released = false;
    const forget = () => {
      if (this.#held.get(role) === client) this.#held.delete(role);
    };
    lost.signal.addEventListener('abort', forget, { once: true });
    return {
      lost: lost.signal,
      release: async () => {
        if (released) return;
        released = true;
        forget();
        // Ending the session releases the lock.
        await client.end().catch(() => undefined);
      },
    };
  }
}
