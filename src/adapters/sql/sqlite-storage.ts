import { Kysely, SqliteDialect } from 'kysely';
import type { Logger } from 'pino';
import { AsyncMutex } from './async-mutex.js';
import type { CheckpointCacheLimits } from './checkpoint-cache.js';
import type { Database, SqlContext } from './database.js';
import { GatedSqliteSaver } from './gated-sqlite-saver.js';
import type { MessageLogLimits } from './message-log.js';
import { migrate } from './migrator.js';
import { kyselySqliteDatabase, openNodeSqlite } from './node-sqlite.js';
import { SqlStorage } from './sql-storage.js';

/**
 * App tables and LangGraph checkpoints in one SQLite file (or ':memory:'), on one
 * node:sqlite connection shared by Kysely and the checkpoint saver.
 */
export async function openSqliteStorage(options: {
  file: string;
  logger: Logger;
  checkpointCache?: Partial<CheckpointCacheLimits>;
  /** What the message log keeps loaded (see message-log.ts); `maxThreads: 0` keeps nothing. */
  messageLog?: Partial<MessageLogLimits>;
}): Promise<SqlStorage> {
  const database = openNodeSqlite(options.file);
  let db: Kysely<Database> | undefined;
  try {
    const kysely = new Kysely<Database>({ dialect: new SqliteDialect({ database: kyselySqliteDatabase(database) }) });
    db = kysely;
    await migrate(kysely, { dialect: 'sqlite', logger: options.logger });
    // Refresh planner statistics where stale (SQLite's advice for a new connection):
    // without them SQLite pages the visible-only history by scanning the primary key.
    database.exec('PRAGMA optimize=0x10002');

    const gate = new AsyncMutex();
    const checkpointer = new GatedSqliteSaver(database, gate, { cache: options.checkpointCache, messageLog: options.messageLog });
    checkpointer.prepare();
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
