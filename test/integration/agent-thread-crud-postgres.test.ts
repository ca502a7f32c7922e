import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { agentThreadCrudSuite } from './agent-thread-crud.suite.js';

const postgres = await postgresTarget();

describePostgres('agent and thread updates on PostgreSQL', postgres, () => {
  agentThreadCrudSuite(() => ({ kind: 'postgres', url: postgres.url }));
});
