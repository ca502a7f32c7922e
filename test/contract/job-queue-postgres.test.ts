import { pino } from 'pino';
import { PgBossJobQueue, pgBossSchemaFor } from '../../src/adapters/jobs/pg-boss-job-queue.js';
import { EmbeddedJobQueue } from '../../src/adapters/jobs/embedded-job-queue.js';
import { PostgresListener } from '../../src/adapters/sql/postgres-listener.js';
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

describePostgres('job table on PostgreSQL (due timers: SKIP LOCKED, NOTIFY wake-ups)', postgres, () => {
  jobQueueContract('job table on PostgreSQL', async () => {
    const schema = randomSchemaName();
    const storage = await openPostgresStorage({ connectionString: postgres.url, schema, logger });
    // One LISTEN connection; every queue (an instance each) registers its own wake-up on it.
    const listener = await PostgresListener.open(postgres.url, logger);
    return {
      storage,
      newQueue: () => new EmbeddedJobQueue({ context: storage.context, clock: { now: () => new Date() }, logger, leaseMs: 1_000, wakeUps: { listener, schema } }),
      slackMs: 300,
      close: async () => {
        await listener.close();
        await storage.close();
        await dropSchema(schema, postgres.url);
      },
    };
  });
});
