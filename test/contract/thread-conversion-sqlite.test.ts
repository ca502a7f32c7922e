import { join } from 'node:path';
import { Kysely, SqliteDialect } from 'kysely';
import { pino } from 'pino';
import { describe } from 'vitest';
import type { Database } from '../../src/adapters/sql/database.js';
import { NodeSqliteSaver } from '../../src/adapters/sql/checkpoint-sqlite-base.js';
import { LegacySqliteSaver } from '../../src/adapters/sql/legacy/sqlite-saver.js';
import { convertLegacySqlite } from '../../src/adapters/sql/legacy/thread-conversion-sqlite.js';
import { MIGRATIONS } from '../../src/adapters/sql/migrations/index.js';
import { migrate } from '../../src/adapters/sql/migrator.js';
import { kyselySqliteDatabase, openNodeSqlite } from '../../src/adapters/sql/node-sqlite.js';
import { openSqliteStorage } from '../../src/adapters/sql/sqlite-storage.js';
import { makeTempDir, removeTempDir } from '../helpers/temp-dir.js';
import { textVersion, threadConversionSuite, type OldDatabase } from './thread-conversion.suite.js';

class TextVersionSaver extends LegacySqliteSaver {
  override getNextVersion(current: number | undefined): number {
    return textVersion(current) as unknown as number;
  }
}

const logger = pino({ level: 'silent' });
/** The schema the previous version ran on: the migrations before the thread store (25). */
const BEFORE_THREAD_STORE = MIGRATIONS.filter((migration) => migration.version < 25);

async function oldSqlite(): Promise<OldDatabase> {
  const dir = await makeTempDir('vigil-thread-conversion-');
  const file = join(dir, 'vigil.sqlite');
  const database = openNodeSqlite(file);
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: kyselySqliteDatabase(database) }) });
  await migrate(db, { dialect: 'sqlite', logger, migrations: BEFORE_THREAD_STORE });
  // As the previous version's openSqliteStorage did: its saver's tables at every open.
  const saver = new LegacySqliteSaver(database);
  saver.prepare();
  const textVersionSaver = new TextVersionSaver(database);
  textVersionSaver.prepare();
  let oldOpen = true;
  const closeOld = async () => {
    if (!oldOpen) return;
    oldOpen = false;
    await db.destroy();
  };
  const read = <T>(query: string, ...params: string[]): T => {
    const reader = openNodeSqlite(file, { readOnly: true });
    try {
      return reader.prepare(query).all(...params) as T;
    } finally {
      reader.close();
    }
  };
  return {
    dialect: 'sqlite',
    saver,
    plainSaver: new NodeSqliteSaver(database),
    textVersionSaver,
    db,
    closeOld,
    async convert(onThread) {
      const connection = openNodeSqlite(file);
      const kysely = new Kysely<Database>({ dialect: new SqliteDialect({ database: kyselySqliteDatabase(connection) }) });
      try {
        await migrate(kysely, { dialect: 'sqlite', logger });
        await convertLegacySqlite(connection, { logger, onThread });
      } finally {
        await kysely.destroy();
      }
    },
    async migrate() {
      const kysely = new Kysely<Database>({ dialect: new SqliteDialect({ database: kyselySqliteDatabase(openNodeSqlite(file)) }) });
      await migrate(kysely, { dialect: 'sqlite', logger }).finally(() => kysely.destroy());
    },
    async execute(statement) {
      const connection = openNodeSqlite(file);
      try {
        connection.exec(statement);
      } finally {
        connection.close();
      }
    },
    open: (withLogger = logger) => openSqliteStorage({ file, logger: withLogger }),
    tables: async () => read<{ name: string }[]>(`SELECT name FROM sqlite_master WHERE type = 'table'`).map((row) => row.name),
    count: async (table, threadId) =>
      threadId === undefined
        ? read<{ count: number }[]>(`SELECT count(*) AS count FROM ${table}`)[0]!.count
        : read<{ count: number }[]>(`SELECT count(*) AS count FROM ${table} WHERE thread_id = ?`, threadId)[0]!.count,
    sentSeq: async (threadId) => read<{ sent_seq: number }[]>('SELECT sent_seq FROM telegram_chats WHERE thread_id = ?', threadId)[0]!.sent_seq,
    async dispose() {
      await closeOld();
      await removeTempDir(dir);
    },
  };
}

describe('thread conversion: SQLite', () => {
  threadConversionSuite({ create: oldSqlite });
});
