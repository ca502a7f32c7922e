import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { chatToolsSuite } from './chat-tools.suite.js';

const postgres = await postgresTarget();

describePostgres('tools and approvals in chat agents on PostgreSQL', postgres, () => {
  // pg-boss polls for due jobs every half second.
  chatToolsSuite(() => ({ kind: 'postgres', url: postgres.url }), { slowMs: 1_000 });
});
