import { sql, type Kysely } from 'kysely';
import type { Logger } from 'pino';
import { z } from 'zod';
import { vigilEventSchema, type VigilEvent } from '../../domain/events.js';
import type { EventBus, EventHandler, SubscribeOptions } from '../../app/ports.js';
import type { PostgresListener } from '../sql/postgres-listener.js';
import { PeriodicTask } from '../../app/periodic-task.js';

export const EVENTS_CHANNEL = 'vigil_events';
/** NOTIFY refuses payloads of 8,000 bytes or more; above this the notice carries only the ids. */
export const INLINE_LIMIT_BYTES = 7_900;
/** Events written in one transaction at most (a thread's burst of tokens under load). */
const BATCH_LIMIT = 200;

const noticeSchema = z.object({
  s: z.string(), // schema: other deployments on the same database are not ours
  t: z.string(), // thread
  f: z.number().int(), // first id
  l: z.number().int(), // last id
  e: z.array(z.unknown()).optional(), // the events themselves, when they fit
});
type Notice = z.infer<typeof noticeSchema>;

export interface PostgresEventBusOptions {
  /** vigil's tables (search_path set to vigil's schema). */
  db: Kysely<any>;
  listener: PostgresListener;
  schema: string;
  logger: Logger;
  /** How long events stay replayable (default an hour). */
  replayWindowMs?: number;
  /** How often events older than the window are deleted (default a minute). */
  pruneIntervalMs?: number;
}

interface Subscriber {
  handler: EventHandler;
  /** The last id this subscriber got; undefined until its first event (a live-only subscriber). */
  cursor: number | undefined;
}

/** The subscribers of one thread on this instance, served one step at a time, in id order. */
interface Feed {
  subscribers: Set<Subscriber>;
  chain: Promise<void>;
  /** The highest id this instance has handed over for the thread: where a live-only subscriber starts. */
  lastSeen?: number;
}

interface Outbox {
  pending: VigilEvent[];
  writing: Promise<void> | undefined;
}

/**
 * Events across instances on PostgreSQL (I15): every instance's subscribers get every event
 * of their threads, in order per thread, once, and can resume after a reconnect.
 *
 * Publishing: a thread's events are written in order, batched (one transaction per batch
 * while the previous one is in flight): the thread's counter row hands out the ids — its
 * row lock orders concurrent publishers on several instances — the events are stored for
 * the replay window, and one NOTIFY tells every instance, with the events inline when they
 * fit in NOTIFY's 8,000 bytes, else only the ids (the listener reads them from the table).
 * NOTIFYs are delivered in commit order, and commits follow id order per thread.
 *
 * Delivering: every subscriber (this instance's included — one path for all) holds a
 * cursor; an event is handed over only above it, and a gap below an incoming event (a
 * replay, a lost connection, an id-only notice) is read from the table first. So a
 * reconnecting client resumes with `afterEventId`, and nothing is repeated.
 */
export class PostgresEventBus implements EventBus {
  readonly #options: PostgresEventBusOptions;
  readonly #logger: Logger;
  readonly #observers = new Set<EventHandler>();
  readonly #feeds = new Map<string, Feed>();
  readonly #outboxes = new Map<string, Outbox>();
  readonly #prune: PeriodicTask<void>;
  #stopListening: (() => void) | undefined;

  private constructor(options: PostgresEventBusOptions) {
    this.#options = options;
    this.#logger = options.logger.child({ component: 'event-bus' });
    this.#prune = new PeriodicTask(() => this.#pruneOld(), { initialDelayMs: options.pruneIntervalMs ?? 60_000, intervalMs: options.pruneIntervalMs ?? 60_000 });
  }

  static async open(options: PostgresEventBusOptions): Promise<PostgresEventBus> {
    const bus = new PostgresEventBus(options);
    bus.#stopListening = await options.listener.listen(EVENTS_CHANNEL, (payload) => bus.#onNotice(payload), () => bus.#catchUpAll());
    bus.#prune.start();
    return bus;
  }

  publish(event: VigilEvent): void {
    for (const observer of this.#observers) this.#deliver(observer, event);
    const threadId = event.threadId;
    if (!threadId) return;
    let outbox = this.#outboxes.get(threadId);
    if (!outbox) {
      outbox = { pending: [], writing: undefined };
      this.#outboxes.set(threadId, outbox);
    }
    outbox.pending.push(event);
    if (!outbox.writing) outbox.writing = this.#drain(threadId, outbox);
  }

  observe(handler: EventHandler): () => void {
    this.#observers.add(handler);
    return () => this.#observers.delete(handler);
  }

  subscribe(threadId: string, handler: EventHandler, options: SubscribeOptions = {}): () => void {
    let feed = this.#feeds.get(threadId);
    if (!feed) {
      feed = { subscribers: new Set(), chain: Promise.resolve() };
      this.#feeds.set(threadId, feed);
    }
    // Live only: from what this instance has handed over so far, or (nothing yet) from the
    // first notice that arrives; never the replay window, which a reading of the table for
    // another subscriber or after a reconnect would otherwise hand it.
    const subscriber: Subscriber = { handler, cursor: options.afterEventId ?? feed.lastSeen };
    feed.subscribers.add(subscriber);
    const replayed = options.onReplayed;
    if (subscriber.cursor !== undefined) {
      this.#enqueue(threadId, feed, async () => {
        try {
          await this.#catchUp(threadId, feed, undefined);
        } finally {
          replayed?.();
        }
      });
    } else if (replayed) queueMicrotask(replayed);
    const owner = feed;
    return () => {
      owner.subscribers.delete(subscriber);
      if (owner.subscribers.size === 0 && this.#feeds.get(threadId) === owner) this.#feeds.delete(threadId);
    };
  }

  async forgetThread(threadId: string): Promise<void> {
    const feed = this.#feeds.get(threadId);
    if (feed) feed.lastSeen = undefined;
    // What this instance still has to write for the thread lands first, so nothing is left after the delete.
    for (let outbox = this.#outboxes.get(threadId); outbox?.writing; outbox = this.#outboxes.get(threadId)) await outbox.writing;
    await this.#options.db.transaction().execute(async (trx) => {
      await sql`DELETE FROM thread_events WHERE thread_id = ${threadId}`.execute(trx);
      await sql`DELETE FROM thread_event_counters WHERE thread_id = ${threadId}`.execute(trx);
    });
  }

  /** Every event published so far is written and notified (shutdown, tests). */
  async flush(): Promise<void> {
    for (;;) {
      const writing = [...this.#outboxes.values()].map((outbox) => outbox.writing).filter((promise): promise is Promise<void> => promise !== undefined);
      if (writing.length === 0) return;
      await Promise.all(writing);
    }
  }

  async close(): Promise<void> {
    await this.flush();
    this.#stopListening?.();
    await this.#prune.stop();
    await Promise.all([...this.#feeds.values()].map((feed) => feed.chain));
    this.#feeds.clear();
  }

  // ---------- publishing ----------

  async #drain(threadId: string, outbox: Outbox): Promise<void> {
    try {
      while (outbox.pending.length > 0) {
        const batch = outbox.pending.splice(0, BATCH_LIMIT);
        try {
          await this.#write(threadId, batch);
        } catch (error) {
          // A run never fails for its audience; subscribers resume from the table once it is back.
          this.#logger.error({ err: error, threadId, events: batch.length, types: [...new Set(batch.map((event) => event.type))] }, 'could not publish events; they are lost to other instances');
        }
      }
    } finally {
      outbox.writing = undefined;
      if (outbox.pending.length > 0) outbox.writing = this.#drain(threadId, outbox);
      else this.#outboxes.delete(threadId);
    }
  }

  async #write(threadId: string, batch: VigilEvent[]): Promise<void> {
    const { db, schema } = this.#options;
    await db.transaction().execute(async (trx) => {
      const counter = await sql<{ last_id: string }>`
        INSERT INTO thread_event_counters (thread_id, last_id) VALUES (${threadId}, ${batch.length})
        ON CONFLICT (thread_id) DO UPDATE SET last_id = thread_event_counters.last_id + ${batch.length}
        RETURNING last_id`.execute(trx);
      const last = Number(counter.rows[0]!.last_id);
      const first = last - batch.length + 1;
      const payloads = batch.map((event) => JSON.stringify(event));
      const rows = payloads.map((payload, index) => sql`(${threadId}, ${first + index}, ${payload})`);
      await sql`INSERT INTO thread_events (thread_id, id, payload) VALUES ${sql.join(rows)}`.execute(trx);
      const inline = JSON.stringify({ s: schema, t: threadId, f: first, l: last, e: batch });
      const notice = Buffer.byteLength(inline) <= INLINE_LIMIT_BYTES ? inline : JSON.stringify({ s: schema, t: threadId, f: first, l: last });
      await sql`SELECT pg_notify(${EVENTS_CHANNEL}, ${notice})`.execute(trx);
    });
  }

  /**
   * Events past the replay window go. A thread's counter row stays while the thread does
   * (its ids must keep growing, or a client resuming after an old id would skip new events);
   * once the thread is deleted and its events are gone, so is the counter — the backstop for
   * a deletion whose forgetThread did not run or an event published after it.
   */
  async #pruneOld(): Promise<void> {
    const horizon = new Date(Date.now() - (this.#options.replayWindowMs ?? 3_600_000)).toISOString();
    try {
      await sql`DELETE FROM thread_events WHERE created_at < ${horizon}`.execute(this.#options.db);
      await sql`
        DELETE FROM thread_event_counters c
        WHERE NOT EXISTS (SELECT 1 FROM threads t WHERE t.id = c.thread_id)
          AND NOT EXISTS (SELECT 1 FROM thread_events e WHERE e.thread_id = c.thread_id)`.execute(this.#options.db);
    } catch (error) {
      this.#logger.warn({ err: error }, 'could not delete events past the replay window');
    }
  }

  // ---------- delivering ----------

  #onNotice(payload: string): void {
    let notice: Notice;
    try {
      notice = noticeSchema.parse(JSON.parse(payload));
    } catch {
      this.#logger.warn({ payload: payload.slice(0, 200) }, 'ignored a malformed event notice');
      return;
    }
    if (notice.s !== this.#options.schema) return;
    const feed = this.#feeds.get(notice.t);
    if (!feed) return;
    this.#enqueue(notice.t, feed, () => this.#apply(notice.t, feed, notice));
  }

  #enqueue(threadId: string, feed: Feed, step: () => Promise<void>): void {
    feed.chain = feed.chain.then(step).catch((error: unknown) => this.#logger.error({ err: error, threadId }, 'could not deliver a thread\'s events'));
  }

  async #apply(threadId: string, feed: Feed, notice: Notice): Promise<void> {
    const inline = notice.e?.map((raw, index) => ({ id: notice.f + index, event: this.#parse(raw) }));
    for (const subscriber of feed.subscribers) subscriber.cursor ??= notice.f - 1; // live from here
    const behind = [...feed.subscribers].some((subscriber) => subscriber.cursor! < notice.f - 1);
    if (behind || !inline) {
      await this.#catchUp(threadId, feed, notice.l);
      return;
    }
    for (const { id, event } of inline) this.#hand(feed, id, event);
  }

  /** Read the events every subscriber lacks (up to `upTo`, or all) from the table and hand them over. */
  async #catchUp(threadId: string, feed: Feed, upTo: number | undefined): Promise<void> {
    const cursors = [...feed.subscribers].map((subscriber) => subscriber.cursor).filter((cursor): cursor is number => cursor !== undefined);
    if (cursors.length === 0) return;
    const from = Math.min(...cursors);
    const rows = await sql<{ id: string; payload: string }>`
      SELECT id, payload FROM thread_events WHERE thread_id = ${threadId} AND id > ${from} ${upTo === undefined ? sql`` : sql`AND id <= ${upTo}`} ORDER BY id`.execute(this.#options.db);
    for (const row of rows.rows) this.#hand(feed, Number(row.id), this.#parse(JSON.parse(row.payload)), { anchoredOnly: true });
  }

  /** An event read back from the database: checked (zod at the boundary); a bad one is skipped, its id still counts. */
  #parse(raw: unknown): VigilEvent | undefined {
    const result = vigilEventSchema.safeParse(raw);
    if (result.success) return result.data;
    this.#logger.warn({ issues: result.error.issues.slice(0, 3) }, 'skipped an event that does not match the event schema');
    return undefined;
  }

  /** `anchoredOnly`: events read back from the table go only to subscribers that know where they are. */
  #hand(feed: Feed, id: number, event: VigilEvent | undefined, options: { anchoredOnly?: boolean } = {}): void {
    feed.lastSeen = Math.max(feed.lastSeen ?? id, id);
    for (const subscriber of feed.subscribers) {
      if (subscriber.cursor === undefined ? options.anchoredOnly === true : id <= subscriber.cursor) continue;
      subscriber.cursor = id;
      if (event) this.#deliver(subscriber.handler, event, id);
    }
    // The thread's ids start again from 1 if a thread of this id is made later: a live
    // subscriber joining then starts from its first notice, not from the old thread's ids.
    if (event?.type === 'thread.deleted') feed.lastSeen = undefined;
  }

  /** The listener was away: notices sent meanwhile are lost, so every feed reads what it missed. */
  #catchUpAll(): void {
    for (const [threadId, feed] of this.#feeds) this.#enqueue(threadId, feed, () => this.#catchUp(threadId, feed, undefined));
  }

  #deliver(handler: EventHandler, event: VigilEvent, id?: number): void {
    try {
      handler(event, id);
    } catch (error) {
      this.#logger.warn({ err: error, threadId: event.threadId, eventType: event.type }, 'event subscriber failed');
    }
  }
}
