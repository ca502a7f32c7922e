/**
 * The conversion of a previous version's threads (thread-conversion.ts) on SQLite: its
 * statements, on the storage's one node:sqlite connection, before anything else uses it.
 */
import type { DatabaseSync } from 'node:sqlite';
import type { BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';
import { SqliteCheckpointStore } from '../checkpoint-store-sqlite.js';
import { inSyncTransaction } from '../node-sqlite.js';
import { ThreadSaver } from '../thread-saver.js';
import { LegacySqliteSaver } from './sqlite-saver.js';
import { HISTORY_V1, THREAD_FIELDS_V1, convertLegacyThreads, notOursError, type ConversionBackend, type ConversionOptions, historyRowV1, type HistoryRowV1, type StoredHistoryRowV1 } from './thread-conversion.js';

/** The old saver's tables (LangGraph's SqliteSaver's two, the message log, stored values). */
const CHECKPOINT_TABLES = ['checkpoints', 'writes', 'checkpoint_messages', 'checkpoint_values'] as const;
const OLD_TABLES = [...CHECKPOINT_TABLES, HISTORY_V1, THREAD_FIELDS_V1];

/** Converts what is left to convert, if anything (one query when nothing is). */
export function convertLegacySqlite(database: DatabaseSync, options: ConversionOptions): Promise<void> {
  return convertLegacyThreads(new SqliteConversion(database), options);
}

class SqliteConversion implements ConversionBackend {
  readonly #db: DatabaseSync;
  /** The old tables as prepare left them. */
  #tables: ReadonlySet<string> = new Set();

  constructor(db: DatabaseSync) {
    this.#db = db;
  }

  async oldTables(): Promise<ReadonlySet<string>> {
    const rows = this.#db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (${OLD_TABLES.map(() => '?').join(', ')})`).all(...OLD_TABLES) as { name: string }[];
    return new Set(rows.map((row) => row.name));
  }

  async prepare(tables: ReadonlySet<string>): Promise<{ oldSaver: BaseCheckpointSaver | undefined }> {
    this.#db.exec(`CREATE TABLE IF NOT EXISTS ${THREAD_FIELDS_V1} (
      thread_id TEXT PRIMARY KEY,
      updated_at TEXT,
      last_user_activity_at TEXT,
      last_visible_preview TEXT,
      last_visible_at TEXT
    ) WITHOUT ROWID`);
    let oldSaver: LegacySqliteSaver | undefined;
    if (tables.has('checkpoints')) {
      // Makes any of its other tables a database of an older version lacks (empty): reads then find nothing there.
      oldSaver = new LegacySqliteSaver(this.#db);
      oldSaver.prepare();
    }
    this.#tables = await this.oldTables();
    return { oldSaver };
  }

  async pending(): Promise<{ threadIds: string[]; checkpoints: number }> {
    const sources = [this.#has('checkpoints') ? 'SELECT thread_id FROM checkpoints' : undefined, this.#has(HISTORY_V1) ? `SELECT thread_id FROM ${HISTORY_V1}` : undefined].filter((source) => source !== undefined);
    if (sources.length === 0) return { threadIds: [], checkpoints: 0 };
    const threadIds = (this.#db.prepare(`${sources.join(' UNION ')} ORDER BY thread_id`).all() as { thread_id: string }[]).map((row) => row.thread_id);
    const checkpoints = this.#has('checkpoints') ? (this.#db.prepare('SELECT count(*) AS count FROM checkpoints').get() as { count: number }).count : 0;
    return { threadIds, checkpoints };
  }

  async namespaces(threadId: string): Promise<string[]> {
    return (this.#db.prepare('SELECT DISTINCT checkpoint_ns FROM checkpoints WHERE thread_id = ? ORDER BY checkpoint_ns').all(threadId) as { checkpoint_ns: string }[]).map((row) => row.checkpoint_ns);
  }

  async checkpointIds(threadId: string, checkpointNs: string): Promise<string[]> {
    return (this.#db.prepare('SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? ORDER BY checkpoint_id').all(threadId, checkpointNs) as { checkpoint_id: string }[]).map(
      (row) => row.checkpoint_id,
    );
  }

  async begin(threadId: string): Promise<void> {
    inSyncTransaction(
      this.#db,
      () => {
        const found = this.#db
          .prepare(`SELECT EXISTS (SELECT 1 FROM thread_keys WHERE thread_id = ?) AS stored, EXISTS (SELECT 1 FROM ${THREAD_FIELDS_V1} WHERE thread_id = ?) AS attempted`)
          .get(threadId, threadId) as { stored: number; attempted: number };
        if (found.stored === 1 && found.attempted === 0) throw notOursError(threadId);
        // Its keys' rows (messages, checkpoints, writes, values) go with them: ON DELETE CASCADE.
        this.#db.prepare('DELETE FROM thread_keys WHERE thread_id = ?').run(threadId);
        this.#db
          .prepare(
            `INSERT OR IGNORE INTO ${THREAD_FIELDS_V1} (thread_id, updated_at, last_user_activity_at, last_visible_preview, last_visible_at)
             SELECT ?, t.updated_at, t.last_user_activity_at, t.last_visible_preview, t.last_visible_at FROM (SELECT 1) LEFT JOIN threads t ON t.id = ?`,
          )
          .run(threadId, threadId);
      },
      'BEGIN IMMEDIATE',
    );
  }

  newStore() {
    const store = new SqliteCheckpointStore(this.#db);
    return { store, saver: new ThreadSaver(store) };
  }

  async unshown(threadId: string): Promise<HistoryRowV1[]> {
    if (!this.#has(HISTORY_V1)) return [];
    const rows = this.#db
      .prepare(
        `SELECT v.seq, v.message_id, v.type, v.content, v.additional_kwargs, v.response_metadata, v.visibility, v.run_id, v.created_at
         FROM ${HISTORY_V1} v
         WHERE v.thread_id = ? AND NOT EXISTS (
           SELECT 1 FROM thread_keys k JOIN thread_messages m ON m.thread_key = k.key
           WHERE k.thread_id = v.thread_id AND k.checkpoint_ns = '' AND m.message_id = v.message_id AND m.visibility IS NOT NULL)
         ORDER BY v.seq`,
      )
      .all(threadId) as unknown as StoredHistoryRowV1[];
    return rows.map(historyRowV1);
  }

  async finish(threadId: string): Promise<void> {
    inSyncTransaction(
      this.#db,
      () => {
        const key = (this.#db.prepare(`SELECT key FROM thread_keys WHERE thread_id = ? AND checkpoint_ns = ''`).get(threadId) as { key: number } | undefined)?.key ?? null;
        if (key !== null && this.#has(HISTORY_V1)) {
          // The run and time each message was shown with (history's times are epoch milliseconds here).
          const update = this.#db.prepare('UPDATE thread_messages SET run_id = ?, created_at = ? WHERE thread_key = ? AND message_id = ? AND visibility IS NOT NULL');
          const rows = this.#db.prepare(`SELECT message_id, run_id, created_at FROM ${HISTORY_V1} WHERE thread_id = ?`).all(threadId) as { message_id: string; run_id: string | null; created_at: string }[];
          for (const row of rows) update.run(row.run_id, Date.parse(row.created_at), key, row.message_id);
        }
        this.#db
          .prepare(
            `UPDATE threads SET
               message_count = (SELECT count(*) FROM thread_messages WHERE thread_key = $key AND visibility IS NOT NULL),
               visible_count = (SELECT count(*) FROM thread_messages WHERE thread_key = $key AND visibility = 'user'),
               updated_at = f.updated_at,
               last_user_activity_at = f.last_user_activity_at,
               last_visible_preview = f.last_visible_preview,
               last_visible_at = f.last_visible_at
             FROM ${THREAD_FIELDS_V1} f
             WHERE threads.id = $thread AND f.thread_id = threads.id AND f.updated_at IS NOT NULL`,
          )
          .run({ key, thread: threadId });
        if (this.#has(HISTORY_V1)) {
          // The last history message handed to a Telegram chat, by its old number: the same message's new number.
          const shown = `FROM ${HISTORY_V1} v JOIN thread_messages m ON m.thread_key = $key AND m.message_id = v.message_id AND m.visibility IS NOT NULL WHERE v.thread_id = $thread`;
          this.#db
            .prepare(
              `UPDATE telegram_chats SET sent_seq = coalesce(
                 (SELECT m.seq ${shown} AND v.seq = telegram_chats.sent_seq),
                 (SELECT max(m.seq) ${shown} AND v.seq <= telegram_chats.sent_seq),
                 -1)
               WHERE thread_id = $thread AND sent_seq >= 0`,
            )
            .run({ key, thread: threadId });
        }
        for (const table of [...CHECKPOINT_TABLES, HISTORY_V1, THREAD_FIELDS_V1]) {
          if (this.#has(table)) this.#db.prepare(`DELETE FROM ${table} WHERE thread_id = ?`).run(threadId);
        }
      },
      'BEGIN IMMEDIATE',
    );
  }

  async anyLeft(): Promise<boolean> {
    const checks = [this.#has('checkpoints') ? 'EXISTS (SELECT 1 FROM checkpoints)' : undefined, this.#has(HISTORY_V1) ? `EXISTS (SELECT 1 FROM ${HISTORY_V1})` : undefined].filter((check) => check !== undefined);
    if (checks.length === 0) return false;
    return (this.#db.prepare(`SELECT ${checks.join(' OR ')} AS left`).get() as { left: number }).left === 1;
  }

  async dropOld(): Promise<void> {
    inSyncTransaction(
      this.#db,
      () => {
        for (const table of OLD_TABLES) this.#db.exec(`DROP TABLE IF EXISTS ${table}`);
      },
      'BEGIN IMMEDIATE',
    );
  }

  #has(table: string): boolean {
    return this.#tables.has(table);
  }
}
