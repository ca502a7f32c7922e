import { pino } from 'pino';
import { afterAll } from 'vitest';
import { openStorage } from '../../src/adapters/storage-factory.js';
import { describePostgres, dropSchema, postgresTarget, randomSchemaName, TEST_DATABASE_URL } from '../helpers/postgres.js';
import { checkInRepositoryContract } from './check-in-repository.contract.js';

const logger = pino({ level: 'silent' });
const postgres = await postgresTarget();

describePostgres('check-in records: PostgreSQL', postgres, () => {
  const schema = randomSchemaName();
  afterAll(async () => {
    await dropSchema(schema);
  });
  checkInRepositoryContract('PostgreSQL', () => openStorage({ databaseUrl: TEST_DATABASE_URL, dataDir: 'unused', logger, postgresSchema: schema }));
});
