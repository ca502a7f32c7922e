import { join } from 'node:path';
import { pino } from 'pino';
import { describe } from 'vitest';
import { NodeSqliteSaver } from '../../src/adapters/sql/checkpoint-sqlite-base.js';
import { openNodeSqlite } from '../../src/adapters/sql/node-sqlite.js';
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
        const database = openNodeSqlite(file);
        closers.add(async () => {
          database.close();
        });
        return new NodeSqliteSaver(database);
      },
      close: () => closers.closeAll(),
    };
  });
});
