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
    if (options.readOnly !== true && file !== ':memory:') {
      database.exec('PRAGMA journal_mode = WAL');
      // What better-sqlite3 was built with (SQLITE_DEFAULT_WAL_SYNCHRONOUS=1), and SQLite's
      // advice for WAL: a commit survives a crash of the process; only an OS crash or
      // power cut can lose the last commits. node:sqlite keeps SQLite's default (FULL),
      // which fsyncs the WAL at every commit: several fsyncs per turn.
      database.exec('PRAGMA synchronous = NORMAL');
    }
  } catch (error) {
    database.close();
    throw error;
  }
  return database;
}

/** Prepared statements kept per connection: Kysely prepares every query it runs, and the same few texts recur every turn. */
const STATEMENT_CACHE_SIZE = 256;

/** The database as Kysely's SqliteDialect expects it. Closing it closes the DatabaseSync. */
export function kyselySqliteDatabase(database: DatabaseSync): SqliteDatabase {
  // A StatementSync is reusable and holds no state between runs, so one per SQL text
  // serves every call (queries are compiled with placeholders, never inlined values).
  const cache = new Map<string, SqliteStatement>();
  return {
    close: () => {
      cache.clear();
      if (database.isOpen) database.close();
    },
    prepare: (sql: string): SqliteStatement => {
      let statement = cache.get(sql);
      if (statement !== undefined) {
        cache.delete(sql);
      } else {
        statement = statementFor(database.prepare(sql));
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!);
      }
      cache.set(sql, statement);
      return statement;
    },
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
