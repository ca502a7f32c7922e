/** The two storage backends, opened the way main.ts opens them, in throw-away places. */
import { join } from 'node:path';
import type { CheckpointCacheStats } from '../src/adapters/sql/checkpoint-cache.js';
import { openPostgresStorage, openSqliteStorage } from '../src/adapters/storage-factory.js';
import type { Storage } from '../src/app/ports.js';
import type { BenchOptions } from './types.js';
import { analyzeSchema, benchSchema, postgresCheckpointCount, postgresTableBytes, schemaBytes, silentLogger, sqliteBytes, sqliteCheckpointCount, sqliteTableBytes, tempDir } from './util.js';

export type BackendName = 'sqlite' | 'postgres';

export interface OpenedStorage {
  storage: Storage;
  /** Bytes the database holds now (SQLite: file + WAL after a WAL checkpoint; PostgreSQL: the schema's tables). */
  bytes(): Promise<number>;
  /** Refresh the planner's statistics, as autovacuum would within a minute (PostgreSQL; a no-op on SQLite). */
  analyze(): Promise<void>;
  /** Checkpoints saved for the thread. */
  checkpoints(threadId: string): Promise<number>;
  /** Checkpoint reads answered by vigil's checkpoint cache so far. */
  cacheHits(): number;
  /** Bytes each table holds now, with its indexes (SQLite: pages, from dbstat; PostgreSQL: pg_total_relation_size). */
  tableBytes(): Promise<Map<string, number>>;
}

function cacheHitsOf(storage: Storage): () => number {
  const saver = storage.checkpointer as { cacheStats?: () => CheckpointCacheStats };
  return () => saver.cacheStats?.().hits ?? 0;
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
      checkpoints: (threadId) => sqliteCheckpointCount(file, threadId),
      cacheHits: cacheHitsOf(storage),
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
    checkpoints: (threadId) => postgresCheckpointCount(url, schema, threadId),
    cacheHits: cacheHitsOf(storage),
    tableBytes: () => postgresTableBytes(url, schema),
  };
}
