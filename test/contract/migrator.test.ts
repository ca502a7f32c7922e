/**
 * The migrator on both dialects: versions recorded in vigil_migrations, applied once,
 * all-or-nothing, and a renamed migration refused.
 */
import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import { kyselySqliteDatabase, openNodeSqlite } from '../../src/adapters/sql/node-sqlite.js';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import type { Database, SqlDialectName } from '../../src/adapters/sql/database.js';
import { MIGRATIONS } from '../../src/adapters/sql/migrations/index.js';
import type { Migration } from '../../src/adapters/sql/migrations/index.js';
import { SqlMemoryStore } from '../../src/adapters/sql/memory-store.js';
import { migrate } from '../../src/adapters/sql/migrator.js';
import { describePostgres, dropSchema, postgresTarget, randomSchemaName, TEST_DATABASE_URL } from '../helpers/postgres.js';

const logger = pino({ level: 'silent' });
const postgres = await postgresTarget();

function probeMigration(version: number, name: string, statements: string[]): Migration {
  return { version, name, statements: { sqlite: statements, postgres: statements } };
}

function migratorCases(dialect: SqlDialectName, open: () => Promise<{ db: Kysely<Database>; schema?: string }>): void {
  async function tableExists(db: Kysely<Database>, table: string): Promise<boolean> {
    const query =
      dialect === 'sqlite'
        ? sql`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ${table}`
        : sql`SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ${table}`;
    return (await query.execute(db)).rows.length > 0;
  }

  it('records each version once, with its name and time, and reapplies nothing', async () => {
    const { db, schema } = await open();
    try {
      await migrate(db, { dialect, logger, schema });
      await migrate(db, { dialect, logger, schema });
      const rows = await db.selectFrom('vigil_migrations').selectAll().orderBy('version').execute();
      expect(rows.map((row) => [Number(row.version), row.name])).toEqual(MIGRATIONS.map((migration) => [migration.version, migration.name]));
      expect(Number.isNaN(new Date(rows[0]!.applied_at).getTime())).toBe(false);
      for (const table of ['agents', 'threads', 'thread_messages', 'runs', 'memories']) expect(await tableExists(db, table)).toBe(true);
    } finally {
      await db.destroy();
    }
  });

  it('applies a failing migration not at all', async () => {
    const { db, schema } = await open();
    try {
      const broken = [
        ...MIGRATIONS,
        probeMigration(MIGRATIONS.length + 1, 'probe_ok', ['CREATE TABLE probe_one (x INTEGER)']),
        probeMigration(MIGRATIONS.length + 2, 'probe_broken', ['CREATE TABLE probe_two (x INTEGER)', 'THIS IS NOT SQL']),
      ];
      await expect(migrate(db, { dialect, logger, schema, migrations: broken })).rejects.toThrow();
      expect(await tableExists(db, 'probe_one')).toBe(false);
      expect(await tableExists(db, 'probe_two')).toBe(false);
      expect(await tableExists(db, 'vigil_migrations')).toBe(false);
    } finally {
      await db.destroy();
    }
  });

  it('I16: version 23 keeps an approved call that finished before it, with its outcome unknown (NULL), and refuses any outcome but succeeded or failed', async () => {
    const { db, schema } = await open();
    try {
      const before = MIGRATIONS.filter((migration) => migration.version < 23);
      await migrate(db, { dialect, logger, schema, migrations: before });
      const at = '2026-01-01T12:00:00.000Z';
      const row = (id: string) => sql`INSERT INTO tool_approvals (id, user_id, agent_id, thread_id, run_id, message_id, tool_call_id, tool, arguments, arguments_hash, attended, requested_at, expires_at, status, execution, result)
        VALUES (${id}, 'alice', 'agent', 't', 'r', 'm', ${id}, 'current_time', '{}', 'h', 0, ${at}, ${at}, 'approved', 'done', 'the tool failed: unknown time zone')`;
      await row('old').execute(db);
      await migrate(db, { dialect, logger, schema });
      const read = async (id: string) => (await sql<{ outcome: string | null; result: string }>`SELECT outcome, result FROM tool_approvals WHERE id = ${id}`.execute(db)).rows[0];
      expect(await read('old')).toEqual({ outcome: null, result: 'the tool failed: unknown time zone' });
      await expect(sql`UPDATE tool_approvals SET outcome = 'maybe' WHERE id = 'old'`.execute(db)).rejects.toThrow();
    } finally {
      await db.destroy();
    }
  });

  it('version 24: memories written before it are found by a part of a compound, without accents, and by stop words alone', async () => {
    const { db, schema } = await open();
    try {
      await migrate(db, { dialect, logger, schema, migrations: MIGRATIONS.filter((migration) => migration.version < 24) });
      const at = '2026-01-01T12:00:00.000Z';
      const contents = { email: 'Send the invoices to alice@example.com', cafe: 'Meets friends at the café', version: 'We ship v1.2.3-beta on Friday' };
      for (const [id, content] of Object.entries(contents)) {
        await db.insertInto('memories').values({ id, user_id: 'alice', agent_id: 'helper', content, created_at: at, updated_at: at, origin: 'api', run_id: null, thread_id: null }).execute();
      }
      await migrate(db, { dialect, logger, schema });
      const memories = new SqlMemoryStore({ db, dialect, transaction: (work) => db.transaction().execute(work) });
      const found = async (query: string) => (await memories.search({ userId: 'alice', agentId: 'helper' }, query, { limit: 10 })).map((hit) => hit.id).sort();
      expect(await found('alice')).toEqual(['email']);
      expect(await found('cafe')).toEqual(['cafe']);
      expect(await found('1.2.3')).toEqual(['version']);
      expect(await found('the')).toEqual(['cafe', 'email']);
      // Written after it, the same.
      await memories.add({ userId: 'alice', agentId: 'helper' }, { id: 'later', content: 'Crème brûlée at bob@example.org', origin: { by: 'api' } }, at);
      expect(await found('creme bob')).toEqual(['later']);
    } finally {
      await db.destroy();
    }
  });

  it('refuses a database whose recorded migration has another name', async () => {
    const { db, schema } = await open();
    try {
      await migrate(db, { dialect, logger, schema });
      const renamed = MIGRATIONS.map((migration, index) => (index === 0 ? { ...migration, name: 'renamed' } : migration));
      await expect(migrate(db, { dialect, logger, schema, migrations: renamed })).rejects.toThrow(/recorded as/);
    } finally {
      await db.destroy();
    }
  });
}

describe('migrator: SQLite', () => {
  migratorCases('sqlite', async () => ({ db: new Kysely<Database>({ dialect: new SqliteDialect({ database: kyselySqliteDatabase(openNodeSqlite(':memory:')) }) }) }));
});

describePostgres('migrator: PostgreSQL', postgres, () => {
  const schemas: string[] = [];

  afterAll(async () => {
    for (const schema of schemas) await dropSchema(schema);
  });

  migratorCases('postgres', async () => {
    const schema = randomSchemaName('vigil_migrator');
    schemas.push(schema);
    const pool = new pg.Pool({ connectionString: TEST_DATABASE_URL, options: `-c search_path=${schema}` });
    return { db: new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }), schema };
  });
});
