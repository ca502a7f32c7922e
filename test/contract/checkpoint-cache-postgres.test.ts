import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
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
        // LangGraph's saver as it ships; the tables already exist.
        const saver = PostgresSaver.fromConnString(TEST_DATABASE_URL, { schema });
        closers.add(() => saver.end());
        return saver;
      },
      close: () => closers.closeAll(),
    };
  });
});
