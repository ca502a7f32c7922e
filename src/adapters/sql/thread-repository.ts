import type { Kysely, Selectable, Transaction } from 'kysely';
import type {
  AlsoWithinThread,
  HistoryOptions,
  Iso,
  MessagePage,
  NewStoredMessage,
  NewThread,
  StoredMessage,
  ThreadPage,
  ThreadRecord,
  ThreadRepository,
} from '../../app/ports.js';
import { VigilError } from '../../domain/errors.js';
import type { StorageTransaction } from '../../app/job-queue.js';
import type { Visibility } from '../../domain/message-metadata.js';
import { appendInOneStatement, type CounterChange } from './append-messages-postgres.js';
import { decodeMessageCursor, decodeThreadCursor, encodeMessageCursor, encodeThreadCursor } from './cursor.js';
import type { Database, SqlContext, ThreadMessagesTable, ThreadsTable } from './database.js';
import { deleteThreadOwnedRows, keepThreadAcceptedDeliveries } from './owned-rows.js';
import { checkLimit, decodeJson, decodeJsonRecord, encodeJson, isoForDatabase, isoFromDatabase, nullableIsoFromDatabase } from './values.js';

/** A row as appendMessages writes it: every column set, timestamps as ISO text. */
type MessageRow = { [Column in keyof ThreadMessagesTable]-?: Column extends 'created_at' ? string : Selectable<ThreadMessagesTable>[Column] };

/** Rows per INSERT / IN list: far below SQLite's bound-parameter limit, whatever the row width. */
const BATCH_SIZE = 200;

export class SqlThreadRepository implements ThreadRepository {
  readonly #context: SqlContext;

  constructor(context: SqlContext) {
    this.#context = context;
  }

  async create(thread: NewThread, now: Iso, alsoWithin?: AlsoWithinThread): Promise<ThreadRecord> {
    if (alsoWithin === undefined) return insertThread(this.#context.db, thread, now);
    return this.#context.transaction(async (trx) => {
      const created = await insertThread(trx, thread, now);
      await alsoWithin(trx as unknown as StorageTransaction, created);
      return created;
    });
  }

  async get(userId: string, threadId: string): Promise<ThreadRecord | undefined> {
    const row = await this.#context.db.selectFrom('threads').selectAll().where('id', '=', threadId).where('user_id', '=', userId).executeTakeFirst();
    return row === undefined ? undefined : toThreadRecord(row);
  }

  async list(userId: string, options: { limit: number; cursor?: string | undefined }): Promise<ThreadPage> {
    const limit = checkLimit(options.limit);
    const after = options.cursor === undefined ? undefined : decodeThreadCursor(options.cursor);
    const rows = await this.#context.db
      .selectFrom('threads')
      .selectAll()
      .where('user_id', '=', userId)
      // A row-value comparison, which both backends answer from the (user_id, updated_at, id) index.
      .$if(after !== undefined, (query) => query.where((eb) => eb(eb.refTuple('updated_at', 'id'), '<', eb.tuple(after!.updatedAt, after!.id))))
      .orderBy('updated_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit + 1)
      .execute();
    const threads = rows.slice(0, limit).map(toThreadRecord);
    const last = threads.at(-1);
    const nextCursor = rows.length > limit && last !== undefined ? encodeThreadCursor({ updatedAt: last.updatedAt, id: last.id }) : null;
    return { threads, nextCursor };
  }

  async appendMessages(threadId: string, messages: NewStoredMessage[], now: Iso): Promise<StoredMessage[]> {
    const updatedAt = isoForDatabase(now);
    if (this.#context.dialect === 'postgres' && messages.length > 0 && messages.length <= BATCH_SIZE && new Set(messages.map((message) => message.id)).size === messages.length) {
      // The common case in one round trip (append-messages-postgres.ts); anything unusual takes the path below.
      const rows = messages.map((message) => messageRow(threadId, message, 0));
      const first = await appendInOneStatement(this.#context.db, threadId, rows, counterChange(rows, messages, updatedAt));
      if (first !== undefined) return rows.map((row, index) => toStoredMessage({ ...row, seq: first + index }));
    }
    return this.#context.transaction(async (trx) => {
      // FOR UPDATE makes concurrent appends to one thread queue here on PostgreSQL; SQLite
      // has a single writer (and one connection) already.
      const thread = await trx
        .selectFrom('threads')
        .select(['message_count', 'visible_count', 'last_user_activity_at'])
        .where('id', '=', threadId)
        .$if(this.#context.dialect === 'postgres', (query) => query.forUpdate())
        .executeTakeFirst();
      if (thread === undefined) throw new VigilError('THREAD_NOT_FOUND', `no thread "${threadId}"`);

      const fresh = await withoutStored(trx, threadId, messages);
      if (fresh.length === 0) return [];

      const rows = fresh.map((message, index) => messageRow(threadId, message, thread.message_count + index));
      for (let start = 0; start < rows.length; start += BATCH_SIZE) {
        await trx.insertInto('thread_messages').values(rows.slice(start, start + BATCH_SIZE)).execute();
      }

      await trx
        .updateTable('threads')
        .set(counterUpdate(thread, rows, counterChange(rows, fresh, updatedAt)))
        .where('id', '=', threadId)
        .execute();
      // Decoded from what was written, so the caller sees exactly what history will return.
      return rows.map(toStoredMessage);
    });
  }

  async history(userId: string, threadId: string, options: HistoryOptions): Promise<MessagePage> {
    const limit = checkLimit(options.limit);
    const before = options.cursor === undefined ? undefined : decodeMessageCursor(options.cursor);
    const fromSeq = options.fromSeq;
    // Keyset on seq, newest first, one row more than asked to learn whether older ones remain.
    const rows = await this.#context.db
      .selectFrom('thread_messages')
      .selectAll()
      .where('thread_id', '=', threadId)
      // I12 in depth: the owner's thread only, whatever the caller checked before.
      .where((query) => query.exists(query.selectFrom('threads').select('id').where('id', '=', threadId).where('user_id', '=', userId)))
      .$if(options.visibility !== 'all', (query) => query.where('visibility', '=', options.visibility === 'user' ? 'user' : 'internal'))
      .$if(before !== undefined, (query) => query.where('seq', '<', before!.seq))
      .$if(fromSeq !== undefined, (query) => query.where('seq', '>=', fromSeq!))
      .orderBy('seq', 'desc')
      .limit(limit + 1)
      .execute();
    const page = rows.slice(0, limit).reverse();
    const oldest = page[0];
    return {
      messages: page.map(toStoredMessage),
      nextCursor: rows.length > limit && oldest !== undefined ? encodeMessageCursor({ seq: oldest.seq }) : null,
    };
  }

  async rename(userId: string, threadId: string, title: string | null): Promise<ThreadRecord | undefined> {
    // updated_at orders the thread list by activity: a rename is not activity, so it stays.
    const row = await this.#context.db
      .updateTable('threads')
      .set({ title })
      .where('id', '=', threadId)
      .where('user_id', '=', userId)
      .returningAll()
      .executeTakeFirst();
    return row === undefined ? undefined : toThreadRecord(row);
  }

  async delete(userId: string, threadId: string): Promise<boolean> {
    return this.#context.transaction(async (trx) => {
      await keepThreadAcceptedDeliveries(trx, userId, threadId);
      // Messages go by ON DELETE CASCADE (SQLite runs with foreign_keys = ON).
      const result = await trx.deleteFrom('threads').where('id', '=', threadId).where('user_id', '=', userId).executeTakeFirst();
      if (result.numDeletedRows === 0n) return false;
      await deleteThreadOwnedRows(trx, userId, threadId);
      return true;
    });
  }

  async hasMessagesOfRun(userId: string, threadId: string, runId: string): Promise<boolean> {
    // No index on run_id: a walk of one thread's rows, on the rare path that asks (a webhook's retried delivery).
    const row = await this.#context.db
      .selectFrom('thread_messages')
      .innerJoin('threads', 'threads.id', 'thread_messages.thread_id')
      .select('thread_messages.seq')
      .where('thread_messages.thread_id', '=', threadId)
      .where('thread_messages.run_id', '=', runId)
      .where('threads.user_id', '=', userId)
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }

  async listIdsByAgent(userId: string, agentId: string): Promise<string[]> {
    const rows = await this.#context.db.selectFrom('threads').select('id').where('user_id', '=', userId).where('agent_id', '=', agentId).execute();
    return rows.map((row) => row.id);
  }
}

async function insertThread(db: Kysely<Database>, thread: NewThread, now: Iso): Promise<ThreadRecord> {
  const at = isoForDatabase(now);
  const row = await db
    .insertInto('threads')
    .values({
      id: thread.id,
      user_id: thread.userId,
      agent_id: thread.agentId,
      title: thread.title,
      created_at: at,
      updated_at: at,
      last_user_activity_at: null,
      visible_count: 0,
      last_visible_preview: null,
      last_visible_at: null,
      message_count: 0,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toThreadRecord(row);
}

/** Drop messages already stored for the thread, and repeats within the batch (first wins). */
async function withoutStored(trx: Transaction<Database>, threadId: string, messages: NewStoredMessage[]): Promise<NewStoredMessage[]> {
  const stored = new Set<string>();
  const ids = [...new Set(messages.map((message) => message.id))];
  for (let start = 0; start < ids.length; start += BATCH_SIZE) {
    const rows = await trx
      .selectFrom('thread_messages')
      .select('message_id')
      .where('thread_id', '=', threadId)
      .where('message_id', 'in', ids.slice(start, start + BATCH_SIZE))
      .execute();
    for (const row of rows) stored.add(row.message_id);
  }
  return messages.filter((message) => {
    if (stored.has(message.id)) return false;
    stored.add(message.id);
    return true;
  });
}

function messageRow(threadId: string, message: NewStoredMessage, seq: number): MessageRow {
  return {
    thread_id: threadId,
    seq,
    message_id: message.id,
    type: message.type,
    content: encodeJson(message.content),
    additional_kwargs: encodeJson(message.additionalKwargs),
    response_metadata: encodeJson(message.responseMetadata),
    visibility: message.visibility,
    run_id: message.runId,
    // Nothing reads a message's preview: the thread keeps its last visible one
    // (threads.last_visible_preview). The column (NOT NULL since 0001) is left empty
    // rather than holding a hundred more bytes of every message.
    preview: '',
    created_at: isoForDatabase(message.createdAt),
  };
}

/** What appending these rows changes in the thread's counters, whatever they hold now. */
function counterChange(rows: readonly MessageRow[], messages: readonly NewStoredMessage[], updatedAt: string): CounterChange {
  const visibleRows = rows.filter((row) => row.visibility === 'user');
  const lastVisibleIndex = rows.findLastIndex((row) => row.visibility === 'user');
  const lastVisible = lastVisibleIndex < 0 ? undefined : { preview: messages[lastVisibleIndex]!.preview, created_at: rows[lastVisibleIndex]!.created_at };
  // I2: only a real person's message is user activity.
  let userActivityAt: string | null = null;
  rows.forEach((row, index) => {
    if (messages[index]?.isRealUserMessage === true && (userActivityAt === null || row.created_at > userActivityAt)) userActivityAt = row.created_at;
  });
  return { visibleAdded: visibleRows.length, updatedAt, userActivityAt, lastVisible: lastVisible === undefined ? null : { preview: lastVisible.preview, at: lastVisible.created_at } };
}

function counterUpdate(thread: Pick<Selectable<ThreadsTable>, 'message_count' | 'visible_count' | 'last_user_activity_at'>, rows: readonly MessageRow[], change: CounterChange) {
  // User activity never moves backwards.
  const before = thread.last_user_activity_at === null ? null : isoFromDatabase(thread.last_user_activity_at);
  const lastUserActivityAt = change.userActivityAt === null || (before !== null && before >= change.userActivityAt) ? before : change.userActivityAt;
  return {
    message_count: thread.message_count + rows.length,
    visible_count: thread.visible_count + change.visibleAdded,
    updated_at: change.updatedAt,
    last_user_activity_at: lastUserActivityAt,
    ...(change.lastVisible === null ? {} : { last_visible_preview: change.lastVisible.preview, last_visible_at: change.lastVisible.at }),
  };
}

function toThreadRecord(row: Selectable<ThreadsTable>): ThreadRecord {
  return {
    id: row.id,
    userId: row.user_id,
    agentId: row.agent_id,
    title: row.title,
    createdAt: isoFromDatabase(row.created_at),
    updatedAt: isoFromDatabase(row.updated_at),
    lastUserActivityAt: nullableIsoFromDatabase(row.last_user_activity_at),
    visibleCount: row.visible_count,
    lastVisiblePreview: row.last_visible_preview,
    lastVisibleAt: nullableIsoFromDatabase(row.last_visible_at),
    messageCount: row.message_count,
  };
}

function toStoredMessage(row: Selectable<ThreadMessagesTable>): StoredMessage {
  return {
    threadId: row.thread_id,
    seq: row.seq,
    id: row.message_id,
    type: row.type,
    content: decodeJson(row.content),
    additionalKwargs: decodeJsonRecord(row.additional_kwargs),
    responseMetadata: decodeJsonRecord(row.response_metadata),
    visibility: row.visibility as Visibility,
    runId: row.run_id,
    createdAt: isoFromDatabase(row.created_at),
  };
}
