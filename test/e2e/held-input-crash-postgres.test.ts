import { describePostgres, dropSchema, postgresTarget, randomSchemaName } from '../helpers/postgres.js';
import { heldInputCrashSuite } from './held-input-crash.suite.js';

const postgres = await postgresTarget();

describePostgres('a crash while the model answers, server process on PostgreSQL', postgres, () => {
  heldInputCrashSuite(async () => {
    const schema = randomSchemaName('vigil_e2e');
    return { env: { DATABASE_URL: postgres.url, VIGIL_DATABASE_SCHEMA: schema }, cleanup: () => dropSchema(schema, postgres.url) };
  });
});
