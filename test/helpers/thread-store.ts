/**
 * For the thread store's suites (thread-saver.suite.ts, held-checkpoint-writes.suite.ts): a
 * database shared by several "servers" (each a storage opened as openStorage builds it, with
 * its own memory), the store's rows counted with the same SQL on both backends, and the form
 * in which a checkpoint is compared with LangGraph's MemorySaver.
 */
import type { BaseMessage } from '@langchain/core/messages';
import type { BaseCheckpointSaver, CheckpointTuple } from '@langchain/langgraph-checkpoint';
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll } from 'vitest';
import type { SqlStorage } from '../../src/adapters/sql/sql-storage.js';
import type { MessageMemoryLimits } from '../../src/adapters/sql/thread-message-memory.js';

export interface StoreBackend {
  readonly name: 'SQLite' | 'PostgreSQL';
  /** A server on the shared database; each call is another server (its own memory). Closed by closeServers at the latest. */
  open(options?: { messageMemory?: Partial<MessageMemoryLimits> }): Promise<SqlStorage>;
  /** Closes every server still open (a PostgreSQL server holds up to ten connections: the database's limit is shared). */
  closeServers(): Promise<void>;
  /** Closes every server and removes the database; called once after the suite. */
  close(): Promise<void>;
}

/** A backend opened before the suite's tests and closed after them, each test's servers closed after it; call inside a describe. */
export function openedBackend(makeBackend: () => Promise<StoreBackend>): () => StoreBackend {
  let backend: StoreBackend | undefined;
  beforeAll(async () => {
    backend = await makeBackend();
  }, 60_000);
  afterEach(async () => {
    await backend?.closeServers();
  });
  afterAll(async () => {
    await backend?.close();
  });
  return () => backend!;
}

/** Helps the per-backend files close what they opened, in reverse. */
export class Closers {
  readonly #closers: (() => Promise<void>)[] = [];

  add(close: () => Promise<void>): void {
    this.#closers.push(close);
  }

  async closeAll(): Promise<void> {
    for (const close of this.#closers.splice(0).reverse()) await close().catch(() => undefined);
  }
}

export type StoreTable = 'thread_messages' | 'thread_checkpoints' | 'thread_checkpoint_writes' | 'thread_values';

/** Rows of one of the store's tables for the thread (every namespace, or one). */
export async function countRows(storage: SqlStorage, table: StoreTable, threadId: string, checkpointNs?: string): Promise<number> {
  const { rows } = await sql<{ count: number | string }>`
    SELECT count(*) AS count FROM ${sql.table(table)} t JOIN thread_keys k ON k.key = t.thread_key
    WHERE k.thread_id = ${threadId} ${checkpointNs === undefined ? sql.raw('') : sql`AND k.checkpoint_ns = ${checkpointNs}`}`.execute(storage.context.db);
  return Number(rows[0]!.count);
}

/** The key of (thread, namespace), or undefined when there is none. */
export async function threadKey(storage: SqlStorage, threadId: string, checkpointNs = ''): Promise<number | undefined> {
  const { rows } = await sql<{ key: number | string }>`SELECT key FROM thread_keys WHERE thread_id = ${threadId} AND checkpoint_ns = ${checkpointNs}`.execute(storage.context.db);
  return rows[0] === undefined ? undefined : Number(rows[0].key);
}

export interface StoredMessageRowView {
  seq: number;
  messageId: string;
  type: string;
  body: Uint8Array;
  visibility: string | null;
}

/** The thread's message rows in a namespace, in number order, as stored. */
export async function messageRows(storage: SqlStorage, threadId: string, checkpointNs = ''): Promise<StoredMessageRowView[]> {
  const { rows } = await sql<{ seq: number | string; message_id: string; type: string; body: Uint8Array; visibility: string | null }>`
    SELECT m.seq, m.message_id, m.type, m.body, m.visibility FROM thread_messages m JOIN thread_keys k ON k.key = m.thread_key
    WHERE k.thread_id = ${threadId} AND k.checkpoint_ns = ${checkpointNs} ORDER BY m.seq`.execute(storage.context.db);
  return rows.map((row) => ({ seq: Number(row.seq), messageId: row.message_id, type: row.type, body: new Uint8Array(row.body), visibility: row.visibility }));
}

/** The stored bodies of the thread's checkpoints in a namespace, newest first. */
export async function checkpointBodies(storage: SqlStorage, threadId: string, checkpointNs = ''): Promise<Uint8Array[]> {
  const { rows } = await sql<{ body: Uint8Array }>`
    SELECT c.body FROM thread_checkpoints c JOIN thread_keys k ON k.key = c.thread_key
    WHERE k.thread_id = ${threadId} AND k.checkpoint_ns = ${checkpointNs} ORDER BY c.checkpoint_id DESC`.execute(storage.context.db);
  return rows.map((row) => new Uint8Array(row.body));
}

/** The thread's stored values (`thread_values`), as text. */
export async function storedValues(storage: SqlStorage, threadId: string): Promise<string[]> {
  const { rows } = await sql<{ value: Uint8Array }>`
    SELECT v.value FROM thread_values v JOIN thread_keys k ON k.key = v.thread_key WHERE k.thread_id = ${threadId} ORDER BY v.hash`.execute(storage.context.db);
  return rows.map((row) => new TextDecoder().decode(row.value));
}

/** The thread's stored pending writes, as text (channel and value). */
export async function storedWrites(storage: SqlStorage, threadId: string): Promise<{ channel: string; value: string }[]> {
  const { rows } = await sql<{ channel: string; value: Uint8Array | null }>`
    SELECT w.channel, w.value FROM thread_checkpoint_writes w JOIN thread_keys k ON k.key = w.thread_key WHERE k.thread_id = ${threadId}`.execute(storage.context.db);
  return rows.map((row) => ({ channel: row.channel, value: row.value === null ? '' : new TextDecoder().decode(row.value) }));
}

/**
 * A checkpoint as two savers holding the same operations must agree on it, as text: its
 * values, versions and metadata, and its pending writes by channel. Left out is only what
 * differs between two runs of the same operations: checkpoint ids, times, and the task ids
 * derived from them.
 */
export function comparable(tuple: CheckpointTuple | undefined): string {
  if (tuple === undefined) return 'none';
  const { id: _id, ts: _ts, ...checkpoint } = tuple.checkpoint;
  return JSON.stringify({
    checkpoint,
    metadata: tuple.metadata,
    pendingWrites: (tuple.pendingWrites ?? []).map(([, channel, value]) => [channel, value]),
    hasParent: tuple.parentConfig !== undefined,
  });
}

/** Every checkpoint of the thread, newest first, in comparable form. */
export async function comparableHistory(saver: BaseCheckpointSaver, threadId: string, checkpointNs?: string): Promise<string[]> {
  const found: string[] = [];
  for await (const tuple of saver.list({ configurable: { thread_id: threadId, ...(checkpointNs === undefined ? {} : { checkpoint_ns: checkpointNs }) } })) found.push(comparable(tuple));
  return found;
}

export async function listTuples(saver: BaseCheckpointSaver, threadId: string): Promise<CheckpointTuple[]> {
  const tuples: CheckpointTuple[] = [];
  for await (const tuple of saver.list({ configurable: { thread_id: threadId } })) tuples.push(tuple);
  return tuples;
}

export function messagesOf(tuple: CheckpointTuple | undefined, channel = 'messages'): BaseMessage[] {
  return (tuple?.checkpoint.channel_values[channel] ?? []) as BaseMessage[];
}

export function latest(threadId: string) {
  return { configurable: { thread_id: threadId } };
}

/** Every stored checkpoint's parent is stored too (or it has none): the ids of parents missing. */
export async function gaps(saver: BaseCheckpointSaver, threadId: string): Promise<string[]> {
  const ids = new Set<string>();
  const parents: string[] = [];
  for await (const tuple of saver.list({ configurable: { thread_id: threadId, checkpoint_ns: '' } })) {
    ids.add(tuple.checkpoint.id);
    const parent = tuple.parentConfig?.configurable?.checkpoint_id as string | undefined;
    if (parent !== undefined) parents.push(parent);
  }
  return parents.filter((parent) => !ids.has(parent));
}
