import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { plannerApprovalsSuite } from './planner-approvals.suite.js';

const postgres = await postgresTarget();

describePostgres('tool approvals in planner agents on PostgreSQL', postgres, () => {
  // pg-boss polls for due jobs every half second.
  plannerApprovalsSuite(() => ({ kind: 'postgres', url: postgres.url }), { slowMs: 1_000 });
});
