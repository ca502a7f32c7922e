/**
 * Applies pending migrations at open, in one transaction, recording each in
 * `vigil_migrations`. Safe when several processes open the same database at once: SQLite
 * takes the write lock up front (BEGIN IMMEDIATE), PostgreSQL serialises openers on an
 * advisory lock that also covers the schema's creation and the checkpointer's setup.
 */
import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database, SqlDialectName } from './database.js';
import { MIGRATIONS } from './migrations/index.js';
import type { Migration } from './migrations/index.js';

export interface MigrateOptions {
  dialect: SqlDialectName;
  logger: Logger;
  /** PostgreSQL only: the schema to create and migrate (search_path already points at it). */
  schema?: string;
  /** PostgreSQL only: more setup to run while other openers wait (the checkpointer's tables). */
  alsoUnderLock?: () => Promise<void>;
  migrations?: readonly Migration[];
}

export async function migrate(db: Kysely<Database>, options: MigrateOptions): Promise<void> {
  const migrations = options.migrations ?? MIGRATIONS;
  checkOrder(migrations);
  // One connection throughout: on SQLite there is only one, on PostgreSQL the advisory
  // lock and the transaction belong to a session.
  await db.connection().execute(async (connection) => {
    if (options.dialect === 'sqlite') {
      await inTransaction(connection, 'BEGIN IMMEDIATE', () => applyPending(connection, migrations, options));
      return;
    }
    const schema = options.schema ?? 'public';
    const lockKey = `vigil:migrate:${schema}`;
    await sql`SELECT pg_advisory_lock(hashtext(${lockKey}))`.execute(connection);
    try {
      // Look first: CREATE SCHEMA IF NOT EXISTS still needs the CREATE privilege, which a
      // least-privilege role using an existing schema may not have.
      const existing = await sql`SELECT 1 FROM pg_namespace WHERE nspname = ${schema}`.execute(connection);
      if (existing.rows.length === 0) await sql`CREATE SCHEMA IF NOT EXISTS ${sql.id(schema)}`.execute(connection);
      await inTransaction(connection, 'BEGIN', () => applyPending(connection, migrations, options));
      await options.alsoUnderLock?.();
    } finally {
      await sql`SELECT pg_advisory_unlock(hashtext(${lockKey}))`.execute(connection);
    }
  });
}

async function inTransaction(connection: Kysely<Database>, begin: string, work: () => Promise<void>): Promise<void> {
  await sql.raw(begin).execute(connection);
  try {
    await work();
    await sql`COMMIT`.execute(connection);
  } catch (error) {
    await sql`ROLLBACK`.execute(connection).catch(() => undefined);
    throw error;
  }
}

async function applyPending(connection: Kysely<Database>, migrations: readonly Migration[], options: MigrateOptions): Promise<void> {
  const appliedAtType = options.dialect === 'sqlite' ? sql`TEXT` : sql`timestamptz`;
  await sql`CREATE TABLE IF NOT EXISTS vigil_migrations (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at ${appliedAtType} NOT NULL
  )`.execute(connection);
  const applied = await connection.selectFrom('vigil_migrations').select(['version', 'name']).execute();
  const appliedNames = new Map(applied.map((row) => [Number(row.version), row.name]));
  const known = new Set(migrations.map((migration) => migration.version));
  const unknown = [...appliedNames.keys()].filter((version) => !known.has(version));
  if (unknown.length > 0) {
    // A newer vigil migrated this database; running older code on it is the operator's call.
    options.logger.warn({ versions: unknown }, 'database has migrations this version of vigil does not know');
  }
  for (const migration of migrations) {
    const appliedName = appliedNames.get(migration.version);
    if (appliedName !== undefined) {
      if (appliedName !== migration.name) {
        throw new Error(`migration ${migration.version} is recorded as "${appliedName}" but this build calls it "${migration.name}"`);
      }
      continue;
    }
    for (const statement of migration.statements[options.dialect]) await sql.raw(statement).execute(connection);
    await connection
      .insertInto('vigil_migrations')
      .values({ version: migration.version, name: migration.name, applied_at: new Date().toISOString() })
      .execute();
    options.logger.info({ version: migration.version, name: migration.name, dialect: options.dialect }, 'applied database migration');
  }
}

function checkOrder(migrations: readonly Migration[]): void {
  migrations.forEach((migration, index) => {
    if (migration.version !== index + 1) throw new Error(`migrations must be numbered 1, 2, 3, …; found ${migration.version} at position ${index + 1}`);
  });
}
