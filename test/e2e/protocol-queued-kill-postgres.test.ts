import { describePostgres, dropSchema, postgresTarget, randomSchemaName } from '../helpers/postgres.js';
import { protocolQueuedKillSuite } from './protocol-queued-kill.suite.js';

const postgres = await postgresTarget();

describePostgres('LangGraph protocol: a queued run whose server died, server process on PostgreSQL', postgres, () => {
  protocolQueuedKillSuite(async () => {
    const schema = randomSchemaName('vigil_e2e');
    return { env: { DATABASE_URL: postgres.url, VIGIL_DATABASE_SCHEMA: schema }, cleanup: () => dropSchema(schema, postgres.url) };
  });
});
