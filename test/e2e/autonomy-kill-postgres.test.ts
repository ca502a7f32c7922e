import { describePostgres, dropSchema, postgresTarget, randomSchemaName } from '../helpers/postgres.js';
import { autonomyKillSuite } from './autonomy-kill.suite.js';

const postgres = await postgresTarget();

describePostgres('autonomy: kill -9 mid-fire on PostgreSQL', postgres, () => {
  // pg-boss retries a job whose worker stopped heartbeating (10 s) at its next monitor pass (5 s).
  autonomyKillSuite(async () => {
    const schema = randomSchemaName('vigil_e2e');
    return { env: { DATABASE_URL: postgres.url, VIGIL_DATABASE_SCHEMA: schema }, cleanup: () => dropSchema(schema, postgres.url) };
  }, 60_000);
});
