import { join } from 'node:path';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import BetterSqlite3 from 'better-sqlite3';
import { pino } from 'pino';
import { describe } from 'vitest';
import { openSqliteStorage } from '../../src/adapters/storage-factory.js';
import { makeTempDir, removeTempDir } from '../helpers/temp-dir.js';
import { Closers, checkpointCacheSuite } from './checkpoint-cache.suite.js';

const logger = pino({ level: 'silent' });

describe('checkpoint cache: SQLite', () => {
  checkpointCacheSuite(async () => {
    const dataDir = await makeTempDir('vigil-checkpoint-cache-');
    const file = join(dataDir, 'vigil.sqlite');
    const closers = new Closers();
    closers.add(() => removeTempDir(dataDir));
    return {
      async open(cache) {
        const storage = await openSqliteStorage({ file, logger, ...(cache ? { checkpointCache: cache } : {}) });
        closers.add(() => storage.close());
        return storage;
      },
      async reference() {
        const database = new BetterSqlite3(file);
        closers.add(async () => {
          database.close();
        });
        return new SqliteSaver(database);
      },
      close: () => closers.closeAll(),
    };
  });
});
