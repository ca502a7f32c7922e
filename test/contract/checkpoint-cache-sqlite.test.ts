import { join } from 'node:path';
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
        // vigil's saver on another connection with no cache and no message memory: every
        // read rebuilds the checkpoint from its rows (LangGraph's SqliteSaver cannot read
        // the message log; its port is checked against the conformance suite instead).
        const storage = await openSqliteStorage({ file, logger, checkpointCache: { maxThreads: 0 }, messageLog: { maxThreads: 0 } });
        closers.add(() => storage.close());
        return storage.checkpointer;
      },
      close: () => closers.closeAll(),
    };
  });
});
