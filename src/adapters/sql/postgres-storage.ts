import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import type { Logger } from 'pino';
import { VigilError } from '../../domain/errors.js';
import { PostgresCheckpointStore } from './checkpoint-store-postgres.js';
import type { Database, SqlContext } from './database.js';
import { convertLegacyPostgres } from './legacy/thread-conversion-postgres.js';
import { migrate } from './migrator.js';
import { SqlStorage } from './sql-storage.js';
import type { MessageMemoryLimits } from './thread-message-memory.js';
import { ThreadSaver } from './thread-saver.js';

/** Unquoted, lower-case identifiers only: search_path and the checkpoint saver must agree on the name. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
/** A connection attempt that hangs fails instead, so ping() (for /readyz) answers. */
const CONNECT_TIMEOUT_MS = 10_000;
const JSON_OID = 114;
const JSONB_OID = 3802;

/**
 * JSON columns come back as their raw text, as on SQLite, so one decoder serves both
 * backends and a stored JSON string is never mistaken for already-parsed JSON.
 */
const jsonAsText: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === JSON_OID || oid === JSONB_OID ? (value: string) => value : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};

/**
 * App tables through Kysely and the thread store (messages, checkpoints) through vigil's
 * checkpoint saver (thread-saver.ts), both in `schema` (created if missing). Each has its own
 * pool.
 */
const APP_POOL_SIZE = 6;
const SAVER_POOL_SIZE = 4;

export async function openPostgresStorage(options: {
  connectionString: string;
  schema?: string | undefined;
  logger: Logger;
  /** What the saver keeps loaded of recent threads' messages; `maxThreads: 0` keeps nothing. */
  messageMemory?: Partial<MessageMemoryLimits>;
}): Promise<SqlStorage> {
  const schema = options.schema ?? 'public';
  if (!SCHEMA_NAME.test(schema)) {
    throw new VigilError('CONFIG_INVALID', `invalid PostgreSQL schema name "${schema}": use lower-case letters, digits and _`);
  }
  // Small pools: several instances (and their job queue and lock pools) share the
  // server's connection limit (100 by default).
  const pool = new pg.Pool({ connectionString: options.connectionString, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, types: jsonAsText, max: APP_POOL_SIZE, idleTimeoutMillis: 5_000 });
  watch(pool, options.logger, 'app tables');
  const db = new Kysely<Database>({
    dialect: new PostgresDialect({
      pool,
      // Set on every new connection (a URL's own ?options= would override a pool option).
      onCreateConnection: async (connection) => {
        await connection.executeQuery(sql`SET search_path TO ${sql.id(schema)}`.compile(db));
      },
    }),
  });
  // The store's statements name tables unqualified: each connection starts with the schema on its
  // search_path (a startup option: set before any query runs on it).
  const saverPool = new pg.Pool({
    connectionString: options.connectionString,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    max: SAVER_POOL_SIZE,
    idleTimeoutMillis: 5_000,
    options: `-c search_path=${schema}`,
  });
  watch(saverPool, options.logger, 'checkpoints');
  const checkpointer = new ThreadSaver(new PostgresCheckpointStore(saverPool), { memory: options.messageMemory });
  const release = async (): Promise<void> => {
    await Promise.all([db.destroy(), saverPool.end()]);
  };
  try {
    await requireUtf8(db);
    // Threads a previous version stored, into the thread store, while other instances wait (they then find nothing to do, at the cost of one query).
    await migrate(db, { dialect: 'postgres', logger: options.logger, schema, alsoUnderLock: () => convertLegacyPostgres(saverPool, schema, { logger: options.logger }) });
  } catch (error) {
    await release().catch(() => undefined);
    throw error;
  }
  const context: SqlContext = { db, dialect: 'postgres', transaction: (work) => db.transaction().execute(work) };
  options.logger.debug({ schema }, 'opened PostgreSQL storage');
  return new SqlStorage(context, checkpointer, release);
}

/**
 * An idle pooled connection that breaks (a server restart, a network cut) makes the pool
 * emit 'error', which would crash the process if nobody listened; the pool replaces the
 * connection on the next query, so a warning is enough.
 */
function watch(pool: pg.Pool, logger: Logger, purpose: string): void {
  pool.on('error', (error) => logger.warn({ err: error, pool: purpose }, 'PostgreSQL connection lost; it will be replaced'));
}

/**
 * Memory search folds text with normalize() (migration 24), which PostgreSQL runs only in a
 * UTF8 database: in another one every memory written would fail (a 500), and migration 24
 * itself once memories exist. Refused here, before anything is created, saying what to do.
 */
async function requireUtf8(db: Kysely<Database>): Promise<void> {
  const { rows } = await sql<{ encoding: string }>`SELECT current_setting('server_encoding') AS encoding`.execute(db);
  const encoding = rows[0]?.encoding;
  if (encoding === 'UTF8') return;
  throw new VigilError('CONFIG_INVALID', `the PostgreSQL database is ${encoding ?? 'of an unknown encoding'}, and vigil needs a UTF8 one: create it with ENCODING 'UTF8' (createdb -E UTF8 -T template0 …) and point DATABASE_URL at it`);
}
