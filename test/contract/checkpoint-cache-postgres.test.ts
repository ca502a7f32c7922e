import { pino } from 'pino';
import { openPostgresStorage } from '../../src/adapters/storage-factory.js';
import { TEST_DATABASE_URL, describePostgres, dropSchema, postgresTarget, randomSchemaName } from '../helpers/postgres.js';
import { Closers, checkpointCacheSuite } from './checkpoint-cache.suite.js';

const logger = pino({ level: 'silent' });
const postgres = await postgresTarget();

describePostgres('checkpoint cache: PostgreSQL', postgres, () => {
  checkpointCacheSuite(async () => {
    const schema = randomSchemaName('vigil_checkpoint_cache');
    const closers = new Closers();
    closers.add(() => dropSchema(schema));
    return {
      async open(cache) {
        const storage = await openPostgresStorage({ connectionString: TEST_DATABASE_URL, schema, logger, ...(cache ? { checkpointCache: cache } : {}) });
        closers.add(() => storage.close());
        return storage;
      },
      async reference() {
        // vigil's saver on its own pools with no cache and no message memory: every read
        // rebuilds the checkpoint from its rows (LangGraph's PostgresSaver cannot read the
        // message log; the conformance suite checks vigil's saver against LangGraph's spec).
        const storage = await openPostgresStorage({ connectionString: TEST_DATABASE_URL, schema, logger, checkpointCache: { maxThreads: 0 }, messageLog: { maxThreads: 0 } });
        closers.add(() => storage.close());
        return storage.checkpointer;
      },
      close: () => closers.closeAll(),
    };
  });
});
