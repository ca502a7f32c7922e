/**
 * Each approval's place among the calls of its model step. A step's approvals share one
 * requested_at, and were ordered by their random ids: the protocol's interrupts listed a
 * step's calls in a random order, and a client answering them in the model's order had its
 * decisions land on the wrong calls. Rows from before this version keep 0 (id order).
 *
 * And an index for a thread's newest approvals: a person's message asks for them (is a
 * decided step still to be carried out?), and the user's index made that a scan of every
 * approval the user ever had.
 */
import type { Migration } from './migration.js';

const STATEMENTS = [
  `ALTER TABLE tool_approvals ADD COLUMN position INTEGER NOT NULL DEFAULT 0`,
  `CREATE INDEX tool_approvals_thread ON tool_approvals (thread_id, requested_at)`,
];

export const approvalPositionMigration: Migration = {
  version: 18,
  name: 'approval-position',
  statements: { sqlite: STATEMENTS, postgres: STATEMENTS },
};
