/**
 * SQLite on Node's built-in `node:sqlite` (no native addon to compile at install), and
 * the small adapter Kysely's own SqliteDialect needs to run on it.
 *
 * Kysely's SqliteDialect is written against better-sqlite3's shape: `prepare(sql)`
 * returning a statement with `reader`, `all(params)`, `run(params)` and
 * `iterate(params)`. node:sqlite's StatementSync has the same synchronous methods with
 * spread parameters, and tells whether a statement returns rows through `columns()`
 * (which is what better-sqlite3's `reader` means, RETURNING included). No dialect package
 * on the registry targets node:sqlite, and this is all one needs.
 */
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import type { SqliteDatabase, SqliteStatement } from 'kysely';

/** How long a write waits for another process's lock before failing with SQLITE_BUSY. */
export const BUSY_TIMEOUT_MS = 5_000;

/** Opens a database file (or ':memory:') the way vigil uses it: WAL, foreign keys, a busy timeout. */
export function openNodeSqlite(file: string, options: { readOnly?: boolean } = {}): DatabaseSync {
  const database = new DatabaseSync(file, { timeout: BUSY_TIMEOUT_MS, enableForeignKeyConstraints: true, readOnly: options.readOnly ?? false });
  try {
    if (options.readOnly !== true && file !== ':memory:') database.exec('PRAGMA journal_mode = WAL');
  } catch (error) {
    database.close();
    throw error;
  }
  return database;
}

/** The database as Kysely's SqliteDialect expects it. Closing it closes the DatabaseSync. */
export function kyselySqliteDatabase(database: DatabaseSync): SqliteDatabase {
  return {
    close: () => {
      if (database.isOpen) database.close();
    },
    prepare: (sql: string): SqliteStatement => statementFor(database.prepare(sql)),
  };
}

function statementFor(statement: StatementSync): SqliteStatement {
  const params = (parameters: ReadonlyArray<unknown>) => parameters as SQLInputValue[];
  return {
    reader: statement.columns().length > 0,
    all: (parameters) => statement.all(...params(parameters)),
    run: (parameters) => statement.run(...params(parameters)),
    iterate: (parameters) => statement.iterate(...params(parameters)),
  };
}

/**
 * Runs `work` in one transaction on a synchronous connection (better-sqlite3's
 * `db.transaction(fn)()`): committed when it returns, rolled back when it throws.
 */
export function inSyncTransaction<T>(database: DatabaseSync, work: () => T, begin: 'BEGIN' | 'BEGIN IMMEDIATE' = 'BEGIN'): T {
  database.exec(begin);
  try {
    const result = work();
    database.exec('COMMIT');
    return result;
  } catch (error) {
    if (database.isTransaction) database.exec('ROLLBACK');
    throw error;
  }
}
