/** The message log's statements on SQLite (node:sqlite, the saver's connection). See message-log.ts. */
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import type { LoggedRow, MessageLogStore, NewLogRow } from './message-log.js';
import { inSyncTransaction } from '../node-sqlite.js';

/** Created with the saver's own tables (the log is the saver's, like `checkpoints`). */
export const SQLITE_MESSAGE_LOG_DDL = [
  `CREATE TABLE IF NOT EXISTS checkpoint_messages (
  thread_id TEXT NOT NULL,
  checkpoint_ns TEXT NOT NULL DEFAULT '',
  seq INTEGER NOT NULL,
  message_id TEXT NOT NULL,
  type TEXT NOT NULL,
  value BLOB NOT NULL,
  PRIMARY KEY (thread_id, checkpoint_ns, seq)
)`,
  'CREATE INDEX IF NOT EXISTS checkpoint_messages_by_id ON checkpoint_messages (thread_id, checkpoint_ns, message_id, seq)',
];

interface Row {
  seq: number;
  message_id: string;
  type: string;
  value: Uint8Array;
}

const COLUMNS = 'seq, message_id, type, value';

export class SqliteMessageLogStore implements MessageLogStore {
  readonly #db: DatabaseSync;
  readonly #range: StatementSync;
  readonly #latest: StatementSync;
  readonly #last: StatementSync;
  readonly #insert: StatementSync;
  readonly #idAt: StatementSync;

  /** The tables must exist (SQLITE_MESSAGE_LOG_DDL). */
  constructor(db: DatabaseSync) {
    this.#db = db;
    this.#range = db.prepare(`SELECT ${COLUMNS} FROM checkpoint_messages WHERE thread_id = ? AND checkpoint_ns = ? AND seq BETWEEN ? AND ?`);
    this.#latest = db.prepare(`SELECT ${COLUMNS} FROM checkpoint_messages WHERE thread_id = ? AND checkpoint_ns = ? AND message_id = ? ORDER BY seq DESC LIMIT 1`);
    this.#last = db.prepare('SELECT coalesce(max(seq), 0) AS last FROM checkpoint_messages WHERE thread_id = ? AND checkpoint_ns = ?');
    this.#insert = db.prepare('INSERT INTO checkpoint_messages (thread_id, checkpoint_ns, seq, message_id, type, value) VALUES (?, ?, ?, ?, ?, ?)');
    this.#idAt = db.prepare('SELECT message_id FROM checkpoint_messages WHERE thread_id = ? AND checkpoint_ns = ? AND seq = ?');
  }

  async read(threadId: string, checkpointNs: string, ranges: readonly number[]): Promise<LoggedRow[]> {
    const rows: LoggedRow[] = [];
    for (let index = 0; index < ranges.length; index += 2) {
      for (const row of this.#range.all(threadId, checkpointNs, ranges[index]!, ranges[index + 1]!) as unknown as Row[]) rows.push(fromRow(row));
    }
    return rows;
  }

  async latest(threadId: string, checkpointNs: string, messageIds: readonly string[]): Promise<LoggedRow[]> {
    const rows: LoggedRow[] = [];
    for (const messageId of messageIds) {
      const row = this.#latest.get(threadId, checkpointNs, messageId) as Row | undefined;
      if (row !== undefined) rows.push(fromRow(row));
    }
    return rows;
  }

  async append(threadId: string, checkpointNs: string, rows: readonly NewLogRow[]): Promise<number[]> {
    // IMMEDIATE: the write lock before reading the last seq, so another process cannot take the same numbers.
    return inSyncTransaction(
      this.#db,
      () => {
        let seq = (this.#last.get(threadId, checkpointNs) as { last: number }).last;
        return rows.map((row) => {
          seq++;
          this.#insert.run(threadId, checkpointNs, seq, row.messageId, row.type, row.value);
          return seq;
        });
      },
      'BEGIN IMMEDIATE',
    );
  }

  async messageIdAt(threadId: string, checkpointNs: string, seq: number): Promise<string | undefined> {
    return (this.#idAt.get(threadId, checkpointNs, seq) as { message_id: string } | undefined)?.message_id;
  }
}

function fromRow(row: Row): LoggedRow {
  return { seq: row.seq, messageId: row.message_id, type: row.type, value: row.value };
}
