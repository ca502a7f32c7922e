/**
 * Whether an approved call that ran worked. Only the output text of a finished call was
 * kept, so a step run again (after a crash, or a cancel mid-step while another call of it
 * still ran) reported a call whose tool threw as `succeeded`: to the model, in the history
 * and in a plan's tool calls. Rows from before this version keep NULL: the call ran, and
 * whether it worked is unknown (nothing recorded it; its text alone does not say, a
 * planner's error text having no mark of its own), so it is read as unknown, never as a
 * success.
 */
import type { Migration } from './migration.js';

const STATEMENTS = [`ALTER TABLE tool_approvals ADD COLUMN outcome TEXT CHECK (outcome IN ('succeeded', 'failed'))`];

export const approvalOutcomeMigration: Migration = {
  version: 23,
  name: 'approval-outcome',
  statements: { sqlite: STATEMENTS, postgres: STATEMENTS },
};
