/** The two storage backends, opened the way main.ts opens them, in throw-away places. */
import { join } from 'node:path';
import { openPostgresStorage, openSqliteStorage } from '../src/adapters/storage-factory.js';
import type { SqlStorage } from '../src/adapters/sql/sql-storage.js';
import type { BenchOptions } from './types.js';
import { analyzeSchema, vacuumSchema, benchSchema, postgresCheckpointCount, postgresTableBytes, schemaBytes, silentLogger, sqliteBytes, sqliteCheckpointCount, sqliteTableBytes, tempDir } from './util.js';

export type BackendName = 'sqlite' | 'postgres';

/** A thread's checkpoints in vigil's thread store (LangGraph's savers keep them in `checkpoints`). */
const VIGIL_CHECKPOINTS = 'thread_checkpoints c JOIN thread_keys k ON k.key = c.thread_key';

export interface OpenedStorage {
  storage: SqlStorage;
  /** Bytes the database holds now (SQLite: file + WAL after a WAL checkpoint; PostgreSQL: the data pages of the schema's tables, indexes and TOAST). */
  bytes(): Promise<number>;
  /** Refresh the planner's statistics, as autovacuum would within a minute (PostgreSQL; a no-op on SQLite). */
  analyze(): Promise<void>;
  /** Make old row versions' space reusable, as autovacuum does (PostgreSQL; a no-op on SQLite, which updates rows in place). */
  vacuum(): Promise<void>;
  /** Checkpoints saved for the thread. */
  checkpoints(threadId: string): Promise<number>;
  /** Bytes each table holds now, with its indexes (SQLite: pages, from dbstat; PostgreSQL: pg_total_relation_size). */
  tableBytes(): Promise<Map<string, number>>;
}

export function backendsOf(options: BenchOptions): BackendName[] {
  return options.postgresUrl === undefined ? ['sqlite'] : ['sqlite', 'postgres'];
}

export async function openBenchStorage(options: BenchOptions, backend: BackendName, label: string): Promise<OpenedStorage> {
  if (backend === 'sqlite') {
    const file = join(await tempDir(options, label), 'vigil.sqlite');
    const storage = await openSqliteStorage({ file, logger: silentLogger });
    options.onCleanup(() => storage.close());
    return {
      storage,
      bytes: () => sqliteBytes(file),
      analyze: async () => undefined,
      vacuum: async () => undefined,
      checkpoints: (threadId) => sqliteCheckpointCount(file, threadId, VIGIL_CHECKPOINTS),
      tableBytes: () => sqliteTableBytes(file),
    };
  }
  const url = options.postgresUrl;
  if (url === undefined) throw new Error('PostgreSQL is not available');
  const schema = benchSchema(options, url);
  const storage = await openPostgresStorage({ connectionString: url, schema, logger: silentLogger });
  options.onCleanup(() => storage.close());
  return {
    storage,
    bytes: () => schemaBytes(url, schema),
    analyze: () => analyzeSchema(url, schema),
    vacuum: () => vacuumSchema(url, schema),
    checkpoints: (threadId) => postgresCheckpointCount(url, schema, threadId, VIGIL_CHECKPOINTS),
    tableBytes: () => postgresTableBytes(url, schema),
  };
}
