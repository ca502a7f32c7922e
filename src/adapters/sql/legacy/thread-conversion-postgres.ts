/**
 * The conversion of a previous version's threads (thread-conversion.ts) on PostgreSQL: its
 * statements, on the checkpoint saver's pool (its connections have the storage's schema on
 * their search_path), run under the migration lock (postgres-storage.ts) so that instances
 * starting together convert once: the first converts, the others find nothing left.
 */
import type { BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';
import type pg from 'pg';
import { PostgresCheckpointStore } from '../checkpoint-store-postgres.js';
import { ThreadSaver } from '../thread-saver.js';
import { LegacyPostgresSaver } from './postgres-saver.js';
import { HISTORY_V1, THREAD_FIELDS_V1, convertLegacyThreads, notOursError, type ConversionBackend, type ConversionOptions, historyRowV1, type HistoryRowV1, type StoredHistoryRowV1 } from './thread-conversion.js';

/** LangGraph's PostgresSaver's tables (made and migrated by its own setup) and vigil's message log beside them. */
const SAVER_TABLES = ['checkpoints', 'checkpoint_blobs', 'checkpoint_writes', 'checkpoint_migrations'] as const;
const CHECKPOINT_TABLES = [...SAVER_TABLES, 'checkpoint_messages'] as const;
const OLD_TABLES = [...CHECKPOINT_TABLES, HISTORY_V1, THREAD_FIELDS_V1];
/** The tables with rows per thread. */
const THREAD_ROW_TABLES = ['checkpoints', 'checkpoint_blobs', 'checkpoint_writes', 'checkpoint_messages', HISTORY_V1, THREAD_FIELDS_V1];

/** Converts what is left to convert, if anything (one query when nothing is). `pool`: its connections' search_path starts with `schema`. */
export function convertLegacyPostgres(pool: pg.Pool, schema: string, options: ConversionOptions): Promise<void> {
  return convertLegacyThreads(new PostgresConversion(pool, schema), options);
}

class PostgresConversion implements ConversionBackend {
  readonly #pool: pg.Pool;
  readonly #schema: string;
  #tables: ReadonlySet<string> = new Set();

  constructor(pool: pg.Pool, schema: string) {
    this.#pool = pool;
    this.#schema = schema;
  }

  async oldTables(): Promise<ReadonlySet<string>> {
    const result = await this.#pool.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND c.relname = ANY($2::text[])`,
      [this.#schema, OLD_TABLES],
    );
    return new Set(result.rows.map((row) => row.name));
  }

  async prepare(tables: ReadonlySet<string>): Promise<{ oldSaver: BaseCheckpointSaver | undefined }> {
    await this.#pool.query(`CREATE TABLE IF NOT EXISTS ${THREAD_FIELDS_V1} (
      thread_id text PRIMARY KEY,
      updated_at timestamptz,
      last_user_activity_at timestamptz,
      last_visible_preview text,
      last_visible_at timestamptz
    )`);
    let oldSaver: LegacyPostgresSaver | undefined;
    if (tables.has('checkpoints')) {
      oldSaver = new LegacyPostgresSaver(this.#pool, { schema: this.#schema });
      // The previous version set up all of them at every open; only a database where that was
      // cut short lacks one, and the old saver's own setup makes it (empty). Not called
      // otherwise: it begins with CREATE SCHEMA, which a least-privilege role may not run.
      if (CHECKPOINT_TABLES.some((table) => !tables.has(table))) await oldSaver.setup();
    }
    this.#tables = await this.oldTables();
    return { oldSaver };
  }

  async pending(): Promise<{ threadIds: string[]; checkpoints: number }> {
    const sources = [this.#has('checkpoints') ? 'SELECT thread_id FROM checkpoints' : undefined, this.#has(HISTORY_V1) ? `SELECT thread_id FROM ${HISTORY_V1}` : undefined].filter((source) => source !== undefined);
    if (sources.length === 0) return { threadIds: [], checkpoints: 0 };
    const threadIds = (await this.#pool.query<{ thread_id: string }>(`${sources.join(' UNION ')} ORDER BY thread_id`)).rows.map((row) => row.thread_id);
    const checkpoints = this.#has('checkpoints') ? Number((await this.#pool.query<{ count: string }>('SELECT count(*) AS count FROM checkpoints')).rows[0]?.count ?? 0) : 0;
    return { threadIds, checkpoints };
  }

  async namespaces(threadId: string): Promise<string[]> {
    const result = await this.#pool.query<{ checkpoint_ns: string }>('SELECT DISTINCT checkpoint_ns FROM checkpoints WHERE thread_id = $1 ORDER BY checkpoint_ns', [threadId]);
    return result.rows.map((row) => row.checkpoint_ns);
  }

  async checkpointIds(threadId: string, checkpointNs: string): Promise<string[]> {
    // COLLATE "C": LangGraph's ids sort by time byte by byte (as the savers' own ORDER BY checkpoint_id does in practice).
    const result = await this.#pool.query<{ checkpoint_id: string }>('SELECT checkpoint_id FROM checkpoints WHERE thread_id = $1 AND checkpoint_ns = $2 ORDER BY checkpoint_id COLLATE "C"', [
      threadId,
      checkpointNs,
    ]);
    return result.rows.map((row) => row.checkpoint_id);
  }

  async begin(threadId: string): Promise<void> {
    // Under the migration lock: nothing else writes the thread between these two statements.
    const found = await this.#pool.query<{ stored: boolean; attempted: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM thread_keys WHERE thread_id = $1) AS stored, EXISTS (SELECT 1 FROM ${THREAD_FIELDS_V1} WHERE thread_id = $1) AS attempted`,
      [threadId],
    );
    if (found.rows[0]?.stored === true && found.rows[0].attempted !== true) throw notOursError(threadId);
    // One statement, so one transaction. Its keys' rows go with them: ON DELETE CASCADE.
    await this.#pool.query(
      `WITH gone AS (DELETE FROM thread_keys WHERE thread_id = $1)
       INSERT INTO ${THREAD_FIELDS_V1} (thread_id, updated_at, last_user_activity_at, last_visible_preview, last_visible_at)
       SELECT $1, t.updated_at, t.last_user_activity_at, t.last_visible_preview, t.last_visible_at FROM (SELECT 1) AS one LEFT JOIN threads t ON t.id = $1
       ON CONFLICT (thread_id) DO NOTHING`,
      [threadId],
    );
  }

  newStore() {
    const store = new PostgresCheckpointStore(this.#pool);
    return { store, saver: new ThreadSaver(store) };
  }

  async unshown(threadId: string): Promise<HistoryRowV1[]> {
    if (!this.#has(HISTORY_V1)) return [];
    const result = await this.#pool.query<StoredHistoryRowV1>(
      `SELECT v.seq, v.message_id, v.type, v.content::text AS content, v.additional_kwargs::text AS additional_kwargs,
              v.response_metadata::text AS response_metadata, v.visibility, v.run_id, v.created_at
       FROM ${HISTORY_V1} v
       WHERE v.thread_id = $1 AND NOT EXISTS (
         SELECT 1 FROM thread_keys k JOIN thread_messages m ON m.thread_key = k.key
         WHERE k.thread_id = v.thread_id AND k.checkpoint_ns = '' AND m.message_id = v.message_id AND m.visibility IS NOT NULL)
       ORDER BY v.seq`,
      [threadId],
    );
    return result.rows.map(historyRowV1);
  }

  async finish(threadId: string): Promise<void> {
    const client = await this.#pool.connect();
    try {
      await client.query('BEGIN');
      const history = `SELECT k.key FROM thread_keys k WHERE k.thread_id = $1 AND k.checkpoint_ns = ''`;
      if (this.#has(HISTORY_V1)) {
        // The run and time each message was shown with.
        await client.query(
          `UPDATE thread_messages m SET run_id = v.run_id, created_at = v.created_at FROM ${HISTORY_V1} v
           WHERE m.thread_key = (${history}) AND m.visibility IS NOT NULL AND v.thread_id = $1 AND v.message_id = m.message_id`,
          [threadId],
        );
      }
      await client.query(
        `UPDATE threads t SET
           message_count = (SELECT count(*) FROM thread_messages WHERE thread_key = (${history}) AND visibility IS NOT NULL),
           visible_count = (SELECT count(*) FROM thread_messages WHERE thread_key = (${history}) AND visibility = 'user'),
           updated_at = f.updated_at,
           last_user_activity_at = f.last_user_activity_at,
           last_visible_preview = f.last_visible_preview,
           last_visible_at = f.last_visible_at
         FROM ${THREAD_FIELDS_V1} f
         WHERE t.id = $1 AND f.thread_id = t.id AND f.updated_at IS NOT NULL`,
        [threadId],
      );
      if (this.#has(HISTORY_V1)) {
        // The last history message handed to a Telegram chat, by its old number: the same message's new number.
        const shown = `FROM ${HISTORY_V1} v JOIN thread_messages m ON m.thread_key = (${history}) AND m.message_id = v.message_id AND m.visibility IS NOT NULL WHERE v.thread_id = $1`;
        await client.query(
          `UPDATE telegram_chats c SET sent_seq = coalesce(
             (SELECT m.seq ${shown} AND v.seq = c.sent_seq),
             (SELECT max(m.seq) ${shown} AND v.seq <= c.sent_seq),
             -1)
           WHERE c.thread_id = $1 AND c.sent_seq >= 0`,
          [threadId],
        );
      }
      for (const table of THREAD_ROW_TABLES) {
        if (this.#has(table)) await client.query(`DELETE FROM ${table} WHERE thread_id = $1`, [threadId]);
      }
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  async anyLeft(): Promise<boolean> {
    const checks = [this.#has('checkpoints') ? 'EXISTS (SELECT 1 FROM checkpoints)' : undefined, this.#has(HISTORY_V1) ? `EXISTS (SELECT 1 FROM ${HISTORY_V1})` : undefined].filter((check) => check !== undefined);
    if (checks.length === 0) return false;
    return (await this.#pool.query<{ left: boolean }>(`SELECT ${checks.join(' OR ')} AS left`)).rows[0]?.left === true;
  }

  async dropOld(): Promise<void> {
    // One statement: all go, or none.
    await this.#pool.query(`DROP TABLE IF EXISTS ${OLD_TABLES.join(', ')}`);
  }

  #has(table: string): boolean {
    return this.#tables.has(table);
  }
}
