/**
 * The thread store's statements on SQLite (node:sqlite, the connection Kysely shares; the
 * saver runs writes behind the storage's gate). See checkpoint-store.ts.
 */
import type { DatabaseSync, SQLInputValue, StatementSync } from 'node:sqlite';
import type { CheckpointStore, CommitRequest, CommitResult, HistoryFacts, ListQuery, StoredCheckpoint, StoredMessageRow, StoredWrite, ThreadRead } from './checkpoint-store.js';
import { StoreConflict } from './checkpoint-store.js';
import { messageIdHash } from './message-id-hash.js';
import { inSyncTransaction } from './node-sqlite.js';

interface CheckpointRow {
  thread_id: string;
  checkpoint_ns: string;
  key: number;
  checkpoint_id: string;
  parent_id: string | null;
  last_seq: number;
  body: Uint8Array;
}

interface WriteRow {
  checkpoint_id: string;
  task_id: string;
  idx: number;
  channel: string;
  type: string | null;
  value: Uint8Array | null;
  task_path: string;
}

interface MessageRow {
  seq: number;
  message_id: string;
  type: string;
  body: Uint8Array;
  visibility: string | null;
}

const CHECKPOINT_COLUMNS = 'k.thread_id, k.checkpoint_ns, k.key, c.checkpoint_id, c.parent_id, c.last_seq, c.body';
const WRITE_COLUMNS = 'checkpoint_id, task_id, idx, channel, type, value, task_path';
// Writes in the order LangGraph's savers return them: by task path, task, index.
const WRITE_ORDER = 'ORDER BY task_path, task_id, idx';

export class SqliteCheckpointStore implements CheckpointStore {
  readonly #db: DatabaseSync;
  readonly #statements = new Map<string, StatementSync>();

  /** The tables must exist (migration 25). */
  constructor(db: DatabaseSync) {
    this.#db = db;
  }

  async key(threadId: string, checkpointNs: string, create: boolean): Promise<number | undefined> {
    if (create) this.#statement('INSERT OR IGNORE INTO thread_keys (thread_id, checkpoint_ns) VALUES (?, ?)').run(threadId, checkpointNs);
    const row = this.#statement('SELECT key FROM thread_keys WHERE thread_id = ? AND checkpoint_ns = ?').get(threadId, checkpointNs) as { key: number } | undefined;
    return row?.key;
  }

  async read(threadId: string, checkpointNs: string, checkpointId?: string): Promise<ThreadRead | undefined> {
    const key = (this.#statement('SELECT key FROM thread_keys WHERE thread_id = ? AND checkpoint_ns = ?').get(threadId, checkpointNs) as { key: number } | undefined)?.key;
    if (key === undefined) return undefined;
    const maxSeq = (this.#statement('SELECT coalesce(max(seq), 0) AS top FROM thread_messages WHERE thread_key = ?').get(key) as { top: number }).top;
    const row = (
      checkpointId === undefined
        ? this.#statement(`SELECT ${CHECKPOINT_COLUMNS} FROM thread_keys k JOIN thread_checkpoints c ON c.thread_key = k.key WHERE k.key = ? ORDER BY c.checkpoint_id DESC LIMIT 1`).get(key)
        : this.#statement(`SELECT ${CHECKPOINT_COLUMNS} FROM thread_keys k JOIN thread_checkpoints c ON c.thread_key = k.key WHERE k.key = ? AND c.checkpoint_id = ?`).get(key, checkpointId)
    ) as CheckpointRow | undefined;
    if (row === undefined) return { key, maxSeq, checkpoint: undefined };
    const writes = this.#statement(`SELECT ${WRITE_COLUMNS} FROM thread_checkpoint_writes WHERE thread_key = ? AND checkpoint_id = ? ${WRITE_ORDER}`).all(key, row.checkpoint_id) as unknown as WriteRow[];
    return { key, maxSeq, checkpoint: toCheckpoint(row, writes.map(toWrite)) };
  }

  async list(query: ListQuery): Promise<StoredCheckpoint[]> {
    const where: string[] = [];
    const args: SQLInputValue[] = [];
    if (query.threadId !== undefined) {
      where.push('k.thread_id = ?');
      args.push(query.threadId);
    }
    if (query.checkpointNs !== undefined) {
      where.push('k.checkpoint_ns = ?');
      args.push(query.checkpointNs);
    }
    if (query.before !== undefined) {
      where.push('c.checkpoint_id < ?');
      args.push(query.before);
    }
    const limit = query.limit !== undefined ? ` LIMIT ${Math.max(0, Math.floor(query.limit))}` : '';
    const sql = `SELECT ${CHECKPOINT_COLUMNS} FROM thread_checkpoints c JOIN thread_keys k ON k.key = c.thread_key
      ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY c.checkpoint_id DESC${limit}`;
    const rows = this.#db.prepare(sql).all(...args) as unknown as CheckpointRow[];
    const writesOf = this.#statement(`SELECT ${WRITE_COLUMNS} FROM thread_checkpoint_writes WHERE thread_key = ? AND checkpoint_id = ? ${WRITE_ORDER}`);
    return rows.map((row) => toCheckpoint(row, (writesOf.all(row.key, row.checkpoint_id) as unknown as WriteRow[]).map(toWrite)));
  }

  async writes(key: number, checkpointId: string): Promise<StoredWrite[]> {
    return (this.#statement(`SELECT ${WRITE_COLUMNS} FROM thread_checkpoint_writes WHERE thread_key = ? AND checkpoint_id = ? ${WRITE_ORDER}`).all(key, checkpointId) as unknown as WriteRow[]).map(toWrite);
  }

  async messages(key: number, ranges: readonly number[]): Promise<StoredMessageRow[]> {
    const statement = this.#statement('SELECT seq, message_id, type, body, visibility FROM thread_messages WHERE thread_key = ? AND seq BETWEEN ? AND ?');
    const rows: StoredMessageRow[] = [];
    for (let index = 0; index < ranges.length; index += 2) {
      for (const row of statement.all(key, ranges[index]!, ranges[index + 1]!) as unknown as MessageRow[]) rows.push(toMessage(row));
    }
    return rows;
  }

  async values(key: number, hashes: readonly string[]): Promise<Map<string, { type: string; value: Uint8Array }>> {
    const statement = this.#statement('SELECT type, value FROM thread_values WHERE thread_key = ? AND hash = ?');
    const found = new Map<string, { type: string; value: Uint8Array }>();
    for (const hash of hashes) {
      const row = statement.get(key, hash) as { type: string; value: Uint8Array } | undefined;
      if (row !== undefined) found.set(hash, row);
    }
    return found;
  }

  async maxSeq(key: number): Promise<number> {
    return (this.#statement('SELECT coalesce(max(seq), 0) AS top FROM thread_messages WHERE thread_key = ?').get(key) as { top: number }).top;
  }

  async commit(request: CommitRequest): Promise<CommitResult> {
    const at = Date.parse(request.at);
    const insert = this.#statement('INSERT INTO thread_messages (thread_key, seq, message_id, id_hash, type, body, visibility, run_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)');
    // INDEXED BY: without statistics SQLite would rather walk the thread's rows by its key.
    const shownAlready = this.#statement('SELECT 1 FROM thread_messages INDEXED BY thread_messages_history_id WHERE thread_key = ? AND id_hash = ? AND visibility IS NOT NULL AND message_id = ?');
    const mark = this.#statement('UPDATE thread_messages SET visibility = ?, run_id = ?, created_at = ? WHERE thread_key = ? AND seq = ? AND visibility IS NULL');
    try {
      return inSyncTransaction(
        this.#db,
        () => {
          const unapplied = request.unapplied === true && request.threadId !== undefined ? this.#unappliedRows(request.threadId) : [];
          const shown: { seq: number; facts: HistoryFacts }[] = [];
          const ids = new Set<string>();
          const mayShow = (messageId: string, facts: HistoryFacts | undefined): facts is HistoryFacts => {
            if (facts === undefined || ids.has(messageId)) return false;
            ids.add(messageId);
            return shownAlready.get(request.key, messageIdHash(messageId), messageId) === undefined;
          };
          for (const row of request.rows) {
            const show = row.shown && mayShow(row.messageId, row.facts);
            insert.run(request.key, row.seq, row.messageId, messageIdHash(row.messageId), row.type, row.body, show ? row.facts!.visibility : null, show ? request.runId : null, show ? at : null);
            if (show) shown.push({ seq: row.seq, facts: row.facts! });
          }
          for (const entry of request.marks) {
            if (!mayShow(entry.messageId, entry.facts)) continue;
            if (Number(mark.run(entry.facts.visibility, request.runId, at, request.key, entry.seq).changes) > 0) shown.push({ seq: entry.seq, facts: entry.facts });
          }
          const value = this.#statement('INSERT OR IGNORE INTO thread_values (thread_key, hash, type, value) VALUES (?, ?, ?, ?)');
          for (const entry of request.values) value.run(request.key, entry.hash, entry.type, entry.value);
          const checkpoint = request.checkpoint;
          if (checkpoint !== undefined) {
            this.#statement(
              `INSERT OR REPLACE INTO thread_checkpoints (thread_key, checkpoint_id, parent_id, last_seq, body)
               VALUES (?, ?, ?, max(?, (SELECT coalesce(max(seq), 0) FROM thread_messages WHERE thread_key = ?)), ?)`,
            ).run(request.key, checkpoint.checkpointId, checkpoint.parentId, checkpoint.lastSeq, request.key, checkpoint.body);
          }
          if (shown.length > 0 && request.threadId !== undefined) this.#moveCounters(request.threadId, shown, request.at);
          return { shown: shown.map((entry) => entry.seq), unapplied };
        },
        'BEGIN IMMEDIATE',
      );
    } catch (error) {
      throw conflictOf(error) ?? error;
    }
  }

  async putWrites(key: number, checkpointId: string, writes: readonly StoredWrite[], replace: boolean): Promise<void> {
    const statement = this.#statement(
      `INSERT ${replace ? 'OR REPLACE' : 'OR IGNORE'} INTO thread_checkpoint_writes (thread_key, checkpoint_id, task_id, idx, channel, type, value, task_path) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    try {
      inSyncTransaction(this.#db, () => {
        for (const write of writes) statement.run(key, checkpointId, write.taskId, write.idx, write.channel, write.type, write.value, write.taskPath);
      });
    } catch (error) {
      throw conflictOf(error) ?? error;
    }
  }

  async deleteThread(threadId: string): Promise<void> {
    this.#statement('DELETE FROM thread_keys WHERE thread_id = ?').run(threadId);
  }

  async unapplied(threadId: string): Promise<StoredMessageRow[]> {
    return this.#unappliedRows(threadId);
  }

  #unappliedRows(threadId: string): StoredMessageRow[] {
    const rows = this.#statement(
      `SELECT m.seq, m.message_id, m.type, m.body, m.visibility FROM thread_keys k JOIN thread_messages m ON m.thread_key = k.key
       WHERE k.thread_id = ? AND k.checkpoint_ns = '' AND m.visibility IS NOT NULL
         AND m.seq > coalesce((SELECT last_seq FROM thread_checkpoints c WHERE c.thread_key = k.key ORDER BY c.checkpoint_id DESC LIMIT 1), 0)
       ORDER BY m.seq`,
    ).all(threadId) as unknown as MessageRow[];
    return rows.map(toMessage);
  }

  /** What the rows history now shows change in the thread's row: counts, last visible message, last real person's message (I2). */
  #moveCounters(threadId: string, shown: readonly { seq: number; facts: HistoryFacts }[], at: string): void {
    const visible = shown.filter((entry) => entry.facts.visibility === 'user');
    const lastVisible = visible.at(-1);
    const realUser = shown.some((entry) => entry.facts.realUser);
    const when = new Date(Date.parse(at)).toISOString();
    this.#statement(
      `UPDATE threads SET
        message_count = message_count + ?,
        visible_count = visible_count + ?,
        updated_at = ?,
        last_user_activity_at = CASE WHEN ? AND (last_user_activity_at IS NULL OR last_user_activity_at < ?) THEN ? ELSE last_user_activity_at END,
        last_visible_preview = CASE WHEN ? THEN ? ELSE last_visible_preview END,
        last_visible_at = CASE WHEN ? THEN ? ELSE last_visible_at END
      WHERE id = ?`,
    ).run(shown.length, visible.length, when, realUser ? 1 : 0, when, when, lastVisible ? 1 : 0, lastVisible?.facts.preview ?? null, lastVisible ? 1 : 0, when, threadId);
  }

  #statement(sql: string): StatementSync {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      statement = this.#db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }
}

function toCheckpoint(row: CheckpointRow, writes: StoredWrite[]): StoredCheckpoint {
  return {
    threadId: row.thread_id,
    checkpointNs: row.checkpoint_ns,
    key: row.key,
    checkpointId: row.checkpoint_id,
    parentId: row.parent_id,
    lastSeq: row.last_seq,
    body: row.body,
    writes,
  };
}

function toWrite(row: WriteRow): StoredWrite {
  return { taskId: row.task_id, idx: row.idx, channel: row.channel, type: row.type, value: row.value, taskPath: row.task_path };
}

function toMessage(row: MessageRow): StoredMessageRow {
  return { seq: row.seq, messageId: row.message_id, type: row.type, body: row.body, shown: row.visibility !== null };
}

/** SQLITE_CONSTRAINT_FOREIGNKEY (787): the key's row is gone; SQLITE_CONSTRAINT_UNIQUE (2067): a row number is taken. */
function conflictOf(error: unknown): StoreConflict | undefined {
  const code = (error as { errcode?: number }).errcode;
  if (code === 787) return new StoreConflict('key', { cause: error });
  if (code === 2067 || code === 1555) return new StoreConflict('seq', { cause: error });
  return undefined;
}
