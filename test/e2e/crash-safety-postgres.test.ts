import { describePostgres, dropSchema, postgresTarget, randomSchemaName } from '../helpers/postgres.js';
import { crashSafetySuite } from './crash-safety.suite.js';

const postgres = await postgresTarget();

describePostgres('crash safety: SIGKILL at random points on PostgreSQL', postgres, () => {
  // pg-boss retries a job whose worker stopped heartbeating (10 s) at its next monitor pass (5 s).
  crashSafetySuite(async () => {
    const schema = randomSchemaName('vigil_e2e_crash');
    return { env: { DATABASE_URL: postgres.url, VIGIL_DATABASE_SCHEMA: schema }, cleanup: () => dropSchema(schema, postgres.url) };
  }, 90_000);
});
