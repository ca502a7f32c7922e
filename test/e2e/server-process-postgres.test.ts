import { describePostgres, dropSchema, postgresTarget, randomSchemaName } from '../helpers/postgres.js';
import { serverProcessSuite } from './server-process.suite.js';

const postgres = await postgresTarget();

describePostgres('server process on PostgreSQL', postgres, () => {
  serverProcessSuite(async () => {
    const schema = randomSchemaName('vigil_e2e');
    return { env: { DATABASE_URL: postgres.url, VIGIL_DATABASE_SCHEMA: schema }, cleanup: () => dropSchema(schema, postgres.url) };
  });
});
