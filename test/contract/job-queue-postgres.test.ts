import { pino } from 'pino';
import { PgBossJobQueue, pgBossSchemaFor } from '../../src/adapters/jobs/pg-boss-job-queue.js';
import { openPostgresStorage } from '../../src/adapters/sql/postgres-storage.js';
import { describePostgres, dropSchema, postgresTarget, randomSchemaName } from '../helpers/postgres.js';
import { jobQueueContract } from './job-queue.contract.js';

const logger = pino({ level: 'silent' });
const postgres = await postgresTarget();

describePostgres('pg-boss job queue', postgres, () => {
  jobQueueContract('pg-boss on PostgreSQL', async () => {
    const schema = randomSchemaName();
    const storage = await openPostgresStorage({ connectionString: postgres.url, schema, logger });
    return {
      storage,
      newQueue: () => new PgBossJobQueue({ connectionString: postgres.url, schema: pgBossSchemaFor(schema), logger, pollingIntervalSeconds: 0.5, poolSize: 3 }),
      slackMs: 1_200,
      close: async () => {
        await storage.close();
        await dropSchema(schema, postgres.url);
        await dropSchema(pgBossSchemaFor(schema), postgres.url);
      },
    };
  });
});
