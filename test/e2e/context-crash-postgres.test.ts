import { describePostgres, dropSchema, postgresTarget, randomSchemaName } from '../helpers/postgres.js';
import { contextCrashSuite } from './context-crash.suite.js';

const postgres = await postgresTarget();

describePostgres('a crash mid-fold, server process on PostgreSQL', postgres, () => {
  contextCrashSuite(async () => {
    const schema = randomSchemaName('vigil_e2e');
    return { env: { DATABASE_URL: postgres.url, VIGIL_DATABASE_SCHEMA: schema }, cleanup: () => dropSchema(schema, postgres.url) };
  });
});
