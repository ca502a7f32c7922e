import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { pino } from 'pino';
import type { Database } from '../../src/adapters/sql/database.js';
import { LegacyPostgresSaver } from '../../src/adapters/sql/legacy/postgres-saver.js';
import { convertLegacyPostgres } from '../../src/adapters/sql/legacy/thread-conversion-postgres.js';
import { MIGRATIONS } from '../../src/adapters/sql/migrations/index.js';
import { migrate } from '../../src/adapters/sql/migrator.js';
import { openPostgresStorage } from '../../src/adapters/sql/postgres-storage.js';
import { TEST_DATABASE_URL, describePostgres, dropSchema, postgresTarget, randomSchemaName } from '../helpers/postgres.js';
import { textVersion, threadConversionSuite, type OldDatabase } from './thread-conversion.suite.js';

class TextVersionSaver extends LegacyPostgresSaver {
  override getNextVersion(current: number | undefined): number {
    return textVersion(current) as unknown as number;
  }
}

const logger = pino({ level: 'silent' });
const postgres = await postgresTarget();
/** The schema the previous version ran on: the migrations before the thread store (25). */
const BEFORE_THREAD_STORE = MIGRATIONS.filter((migration) => migration.version < 25);

function poolOn(schema: string): pg.Pool {
  return new pg.Pool({ connectionString: TEST_DATABASE_URL, max: 2, options: `-c search_path=${schema}` });
}

async function oldPostgres(): Promise<OldDatabase> {
  const schema = randomSchemaName('vigil_conversion');
  const appPool = poolOn(schema);
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: appPool }) });
  await migrate(db, { dialect: 'postgres', logger, schema, migrations: BEFORE_THREAD_STORE });
  // As the previous version's openPostgresStorage did: its saver's own pool, its tables set up at every open.
  const saverPool = new pg.Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
  const saver = new LegacyPostgresSaver(saverPool, { schema });
  await saver.setup();
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL, options: `-c search_path=${schema}` });
  await client.connect();
  let oldOpen = true;
  const closeOld = async () => {
    if (!oldOpen) return;
    oldOpen = false;
    await Promise.all([db.destroy(), saverPool.end()]);
  };
  return {
    dialect: 'postgres',
    saver,
    plainSaver: new PostgresSaver(saverPool, undefined, { schema }),
    textVersionSaver: new TextVersionSaver(saverPool, { schema }),
    db,
    closeOld,
    async convert(onThread) {
      const pool = poolOn(schema);
      const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
      try {
        await migrate(kysely, { dialect: 'postgres', logger, schema, alsoUnderLock: () => convertLegacyPostgres(pool, schema, { logger, onThread }) });
      } finally {
        await kysely.destroy();
      }
    },
    async migrate() {
      const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool: poolOn(schema) }) });
      await migrate(kysely, { dialect: 'postgres', logger, schema }).finally(() => kysely.destroy());
    },
    async execute(statement) {
      await client.query(statement);
    },
    open: (withLogger = logger) => openPostgresStorage({ connectionString: TEST_DATABASE_URL, schema, logger: withLogger }),
    tables: async () => (await client.query<{ name: string }>('SELECT table_name AS name FROM information_schema.tables WHERE table_schema = $1', [schema])).rows.map((row) => row.name),
    count: async (table, threadId) =>
      Number(
        (threadId === undefined
          ? await client.query<{ count: string }>(`SELECT count(*) AS count FROM ${table}`)
          : await client.query<{ count: string }>(`SELECT count(*) AS count FROM ${table} WHERE thread_id = $1`, [threadId])
        ).rows[0]!.count,
      ),
    sentSeq: async (threadId) => (await client.query<{ sent_seq: number }>('SELECT sent_seq FROM telegram_chats WHERE thread_id = $1', [threadId])).rows[0]!.sent_seq,
    async dispose() {
      await closeOld();
      await client.end();
      await dropSchema(schema);
    },
  };
}

describePostgres('thread conversion: PostgreSQL', postgres, () => {
  threadConversionSuite({ create: oldPostgres, concurrentOpens: true });
});
