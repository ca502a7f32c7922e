import type { BaseMessage } from '@langchain/core/messages';
import type { Kysely, Selectable } from 'kysely';
import type { AlsoWithinThread, HistoryOptions, Iso, MessagePage, NewThread, StoredMessage, ThreadPage, ThreadRecord, ThreadRepository } from '../../app/ports.js';
import type { StorageTransaction } from '../../app/job-queue.js';
import { projectMessage } from '../../app/message-projection.js';
import type { Visibility } from '../../domain/message-metadata.js';
import type { StoredMessageRow } from './checkpoint-store.js';
import { decodeMessageCursor, decodeThreadCursor, encodeMessageCursor, encodeThreadCursor } from './cursor.js';
import type { Database, SqlContext, ThreadMessagesTable, ThreadsTable } from './database.js';
import { deleteThreadOwnedRows, keepThreadAcceptedDeliveries } from './owned-rows.js';
import { checkLimit, createdAtFromDatabase, isoForDatabase, isoFromDatabase, nullableIsoFromDatabase } from './values.js';

/** The messages of a key's rows, decoded by the checkpoint saver (which may hold them in memory already). */
export type MessageDecoder = (key: number, rows: readonly StoredMessageRow[]) => Promise<BaseMessage[]>;

type HistoryRow = Pick<Selectable<ThreadMessagesTable>, 'thread_key' | 'seq' | 'message_id' | 'type' | 'body' | 'visibility' | 'run_id' | 'created_at'>;

/**
 * Threads and their history. History is the thread store's message rows that it shows
 * (thread_messages with a visibility, namespace ''), written by the checkpoint saver in the
 * transaction that stores the checkpoint holding them, with the thread's counters.
 */
export class SqlThreadRepository implements ThreadRepository {
  readonly #context: SqlContext;
  readonly #decode: MessageDecoder;

  constructor(context: SqlContext, decode: MessageDecoder) {
    this.#context = context;
    this.#decode = decode;
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

  async history(userId: string, threadId: string, options: HistoryOptions): Promise<MessagePage> {
    const limit = checkLimit(options.limit);
    const before = options.cursor === undefined ? undefined : decodeMessageCursor(options.cursor);
    const fromSeq = options.fromSeq;
    // Keyset on seq, newest first, one row more than asked to learn whether older ones remain.
    const rows = await this.#historyRows(userId, threadId)
      .$if(options.visibility === 'all', (query) => query.where('m.visibility', 'is not', null))
      .$if(options.visibility !== 'all', (query) => query.where('m.visibility', '=', options.visibility === 'user' ? 'user' : 'internal'))
      .$if(before !== undefined, (query) => query.where('m.seq', '<', before!.seq))
      .$if(fromSeq !== undefined, (query) => query.where('m.seq', '>=', fromSeq!))
      .orderBy('m.seq', 'desc')
      .limit(limit + 1)
      .execute();
    const page = rows.slice(0, limit).reverse();
    const oldest = page[0];
    return {
      messages: await this.#stored(threadId, page),
      nextCursor: rows.length > limit && oldest !== undefined ? encodeMessageCursor({ seq: oldest.seq }) : null,
    };
  }

  async messagesOfRun(userId: string, threadId: string, runId: string): Promise<StoredMessage[]> {
    // No index on run_id: a walk of one thread's rows, on the rare paths that ask (a crashed run's recovery, a webhook's retried delivery).
    const rows = await this.#historyRows(userId, threadId).where('m.visibility', 'is not', null).where('m.run_id', '=', runId).orderBy('m.seq').execute();
    return this.#stored(threadId, rows);
  }

  /** History rows of the user's thread (I12 in depth: the owner's thread only, whatever the caller checked before). */
  #historyRows(userId: string, threadId: string) {
    return this.#context.db
      .selectFrom('thread_messages as m')
      .innerJoin('thread_keys as k', 'k.key', 'm.thread_key')
      .select(['m.thread_key', 'm.seq', 'm.message_id', 'm.type', 'm.body', 'm.visibility', 'm.run_id', 'm.created_at'])
      .where('k.thread_id', '=', threadId)
      .where('k.checkpoint_ns', '=', '')
      .where((query) => query.exists(query.selectFrom('threads').select('id').where('id', '=', threadId).where('user_id', '=', userId)));
  }

  /** Rows as history returns them: the message decoded, its tool calls as their redacted view (message-projection.ts). */
  async #stored(threadId: string, rows: readonly HistoryRow[]): Promise<StoredMessage[]> {
    if (rows.length === 0) return [];
    const messages = await this.#decode(
      rows[0]!.thread_key,
      rows.map((row) => ({ seq: row.seq, messageId: row.message_id, type: row.type, body: row.body })),
    );
    return rows.map((row, index) => {
      const createdAt = createdAtFromDatabase(row.created_at as number | Date | string | null);
      const { row: projected } = projectMessage(messages[index]!, row.run_id, createdAt);
      return {
        threadId,
        seq: Number(row.seq),
        id: row.message_id,
        type: projected.type,
        content: projected.content,
        additionalKwargs: projected.additionalKwargs,
        responseMetadata: projected.responseMetadata,
        visibility: row.visibility as Visibility,
        runId: row.run_id,
        createdAt,
      };
    });
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
      const result = await trx.deleteFrom('threads').where('id', '=', threadId).where('user_id', '=', userId).executeTakeFirst();
      if (result.numDeletedRows === 0n) return false;
      await deleteThreadOwnedRows(trx, userId, threadId);
      // Its messages (history) and checkpoints, every namespace, by ON DELETE CASCADE from their
      // keys (SQLite runs with foreign_keys = ON): in this transaction, so a deletion that fails
      // leaves the thread whole, and one that commits leaves nothing of what was said.
      await trx.deleteFrom('thread_keys').where('thread_id', '=', threadId).execute();
      return true;
    });
  }

  async hasMessagesOfRun(userId: string, threadId: string, runId: string): Promise<boolean> {
    const row = await this.#historyRows(userId, threadId).where('m.visibility', 'is not', null).where('m.run_id', '=', runId).limit(1).executeTakeFirst();
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

