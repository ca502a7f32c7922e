import { Kysely, SqliteDialect } from 'kysely';
import type { Logger } from 'pino';
import { AsyncMutex } from './async-mutex.js';
import { SqliteCheckpointStore } from './checkpoint-store-sqlite.js';
import type { Database, SqlContext } from './database.js';
import { convertLegacySqlite } from './legacy/thread-conversion-sqlite.js';
import { migrate } from './migrator.js';
import { kyselySqliteDatabase, openNodeSqlite } from './node-sqlite.js';
import { SqlStorage } from './sql-storage.js';
import type { MessageMemoryLimits } from './thread-message-memory.js';
import { ThreadSaver } from './thread-saver.js';

/**
 * App tables and the thread store (messages, checkpoints) in one SQLite file (or ':memory:'),
 * on one node:sqlite connection shared by Kysely and the checkpoint saver.
 *
 * One connection means one transaction scope. Kysely's transactions await between
 * statements, and a saver write landing in such a gap would silently join the transaction
 * and vanish if it rolled back; so the saver's writes (synchronous transactions of their own)
 * wait behind the same gate as Kysely's transactions.
 */
export async function openSqliteStorage(options: {
  file: string;
  logger: Logger;
  /** What the saver keeps loaded of recent threads' messages; `maxThreads: 0` keeps nothing. */
  messageMemory?: Partial<MessageMemoryLimits>;
}): Promise<SqlStorage> {
  const database = openNodeSqlite(options.file);
  let db: Kysely<Database> | undefined;
  try {
    const kysely = new Kysely<Database>({ dialect: new SqliteDialect({ database: kyselySqliteDatabase(database) }) });
    db = kysely;
    await migrate(kysely, { dialect: 'sqlite', logger: options.logger });
    // Threads a previous version stored, into the thread store (nothing to do costs one query).
    await convertLegacySqlite(database, { logger: options.logger });
    // Refresh planner statistics where stale (SQLite's advice for a new connection):
    // without them SQLite pages the visible-only history by scanning the primary key.
    database.exec('PRAGMA optimize=0x10002');

    const gate = new AsyncMutex();
    const checkpointer = new ThreadSaver(new SqliteCheckpointStore(database), { gate: (work) => gate.run(work), memory: options.messageMemory });
    const context: SqlContext = {
      db: kysely,
      dialect: 'sqlite',
      transaction: (work) => gate.run(() => kysely.transaction().execute(work)),
    };
    options.logger.debug({ file: options.file }, 'opened SQLite storage');
    const release = async (): Promise<void> => {
      // Queued behind any transaction in flight; then statistics for the next open
      // (SQLite's advice before closing). Kysely's driver closes the connection, which
      // is also the saver's.
      await gate.run(async () => {
        database.exec('PRAGMA optimize');
      }).catch((error: unknown) => options.logger.warn({ err: error }, 'SQLite optimize before close failed'));
      await kysely.destroy();
    };
    return new SqlStorage(context, checkpointer, release);
  } catch (error) {
    if (db === undefined) database.close();
    else await db.destroy();
    throw error;
  }
}
