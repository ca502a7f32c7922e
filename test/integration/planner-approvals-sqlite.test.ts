import { describe } from 'vitest';
import { plannerApprovalsSuite } from './planner-approvals.suite.js';

describe('tool approvals in planner agents on SQLite', () => {
  plannerApprovalsSuite(() => ({ kind: 'sqlite' }), { slowMs: 0 });
});
