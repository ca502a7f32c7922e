import pg from 'pg';
import type { Logger } from 'pino';

const RECONNECT_DELAY_MS = 1_000;

export type NotificationHandler = (payload: string) => void;

interface Channel {
  handlers: Set<NotificationHandler>;
  /** Told after the connection came back: notices sent meanwhile were lost, look them up. */
  reconnected: Set<() => void>;
}

/**
 * The one LISTEN connection of an instance, shared by everything that waits for
 * PostgreSQL notifications (the event bus, the thread-yield notices): one dedicated
 * client, reconnected after a second when it drops, every channel LISTENed again, and
 * each channel's `reconnected` callbacks called so its user can catch up on what it
 * missed (NOTIFY is not stored: a notice sent while nobody listened is gone).
 */
export class PostgresListener {
  readonly #connectionString: string;
  readonly #applicationName: string;
  readonly #logger: Logger;
  readonly #channels = new Map<string, Channel>();
  #client: pg.Client | undefined;
  #connecting: Promise<void> | undefined;
  #closed = false;

  private constructor(connectionString: string, logger: Logger, applicationName: string) {
    this.#connectionString = connectionString;
    this.#applicationName = applicationName;
    this.#logger = logger.child({ component: 'postgres-listener' });
  }

  /** `applicationName` names the connection in pg_stat_activity (which instance listens). */
  static async open(connectionString: string, logger: Logger, applicationName = 'vigil-listener'): Promise<PostgresListener> {
    const listener = new PostgresListener(connectionString, logger, applicationName);
    await listener.#connect();
    return listener;
  }

  get connected(): boolean {
    return this.#client !== undefined;
  }

  /**
   * Hear every notice on `channel` (a PostgreSQL identifier, lower case). Resolves once the
   * LISTEN is in place: a notice committed after that is heard. Returns the stop function.
   */
  async listen(channel: string, handler: NotificationHandler, onReconnected?: () => void): Promise<() => void> {
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(channel)) throw new Error(`invalid channel name ${channel}`);
    let entry = this.#channels.get(channel);
    const fresh = !entry;
    if (!entry) {
      entry = { handlers: new Set(), reconnected: new Set() };
      this.#channels.set(channel, entry);
    }
    entry.handlers.add(handler);
    if (onReconnected) entry.reconnected.add(onReconnected);
    if (fresh && this.#client) await this.#client.query(`LISTEN ${channel}`);
    const registered = entry;
    return () => {
      registered.handlers.delete(handler);
      if (onReconnected) registered.reconnected.delete(onReconnected);
    };
  }

  async close(): Promise<void> {
    this.#closed = true;
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => undefined);
  }

  async #connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.#connectionString, application_name: this.#applicationName });
    client.on('notification', (message) => {
      const entry = this.#channels.get(message.channel);
      if (!entry) return;
      for (const handler of entry.handlers) {
        try {
          handler(message.payload ?? '');
        } catch (error) {
          this.#logger.warn({ err: error, channel: message.channel }, 'a notification handler failed');
        }
      }
    });
    client.on('error', (error) => {
      if (this.#client !== client) return;
      this.#logger.warn({ err: error }, 'the notification listener lost its connection; reconnecting');
      this.#client = undefined;
      void client.end().catch(() => undefined);
      this.#reconnectLater();
    });
    await client.connect();
    try {
      for (const channel of this.#channels.keys()) await client.query(`LISTEN ${channel}`);
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

  #reconnectLater(): void {
    if (this.#closed || this.#connecting) return;
    this.#connecting = new Promise<void>((resolve) => setTimeout(resolve, RECONNECT_DELAY_MS).unref()).then(async () => {
      this.#connecting = undefined;
      if (this.#closed) return;
      try {
        await this.#connect();
      } catch (error) {
        this.#logger.warn({ err: error }, 'could not reconnect the notification listener');
        this.#reconnectLater();
        return;
      }
      this.#logger.info('the notification listener is back');
      for (const entry of this.#channels.values()) for (const callback of entry.reconnected) callback();
    });
  }
}
