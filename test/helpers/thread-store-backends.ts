/**
 * The thread store's suites' backends (thread-saver-*.test.ts, held-checkpoint-writes-*.test.ts):
 * one database shared by the servers a suite opens, each opened as openStorage opens it.
 */
import { join } from 'node:path';
import { pino } from 'pino';
import { openPostgresStorage, openSqliteStorage } from '../../src/adapters/storage-factory.js';
import { TEST_DATABASE_URL, dropSchema, randomSchemaName } from './postgres.js';
import { makeTempDir, removeTempDir } from './temp-dir.js';
import { Closers, type StoreBackend } from './thread-store.js';

const logger = pino({ level: 'silent' });

/** One SQLite file; each server its own connection to it. */
export async function sqliteStoreBackend(): Promise<StoreBackend> {
  const dataDir = await makeTempDir('vigil-thread-store-');
  const file = join(dataDir, 'vigil.sqlite');
  const servers = new Closers();
  return {
    name: 'SQLite',
    async open(options = {}) {
      const storage = await openSqliteStorage({ file, logger, ...options });
      servers.add(() => storage.close());
      return storage;
    },
    closeServers: () => servers.closeAll(),
    async close() {
      await servers.closeAll();
      await removeTempDir(dataDir);
    },
  };
}

/** One fresh schema (dropped at the end); each server its own pools on it. */
export async function postgresStoreBackend(): Promise<StoreBackend> {
  const schema = randomSchemaName('vigil_thread_store');
  const servers = new Closers();
  return {
    name: 'PostgreSQL',
    async open(options = {}) {
      const storage = await openPostgresStorage({ connectionString: TEST_DATABASE_URL, schema, logger, ...options });
      servers.add(() => storage.close());
      return storage;
    },
    closeServers: () => servers.closeAll(),
    async close() {
      await servers.closeAll();
      await dropSchema(schema);
    },
  };
}
