import { pino } from 'pino';
import { afterAll } from 'vitest';
import { openStorage } from '../../src/adapters/storage-factory.js';
import { describePostgres, dropSchema, postgresTarget, randomSchemaName, TEST_DATABASE_URL } from '../helpers/postgres.js';
import { storageContract } from './storage.contract.js';

const logger = pino({ level: 'silent' });
const postgres = await postgresTarget();

describePostgres('PostgreSQL storage', postgres, () => {
  // A fresh schema for this file, created by openStorage and dropped at the end.
  const schema = randomSchemaName();

  afterAll(async () => {
    await dropSchema(schema);
  });

  storageContract('PostgreSQL', () => openStorage({ databaseUrl: TEST_DATABASE_URL, dataDir: 'unused', logger, postgresSchema: schema }));
});
