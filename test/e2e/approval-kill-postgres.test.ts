import { describePostgres, dropSchema, postgresTarget, randomSchemaName } from '../helpers/postgres.js';
import { approvalKillSuite } from './approval-kill.suite.js';

const postgres = await postgresTarget();

describePostgres('approvals: kill -9 while a follow-up waits, server process on PostgreSQL', postgres, () => {
  approvalKillSuite(async () => {
    const schema = randomSchemaName('vigil_e2e');
    return { env: { DATABASE_URL: postgres.url, VIGIL_DATABASE_SCHEMA: schema }, cleanup: () => dropSchema(schema, postgres.url) };
  }, 60_000);
});
