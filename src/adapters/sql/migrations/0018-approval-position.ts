/**
 * Each approval's place among the calls of its model step. A step's approvals share one
 * requested_at, and were ordered by their random ids: the protocol's interrupts listed a
 * step's calls in a random order, and a client answering them in the model's order had its
 * decisions land on the wrong calls. Rows from before this version keep 0 (id order).
 */
import type { Migration } from './migration.js';

const ADD_COLUMN = [`ALTER TABLE tool_approvals ADD COLUMN position INTEGER NOT NULL DEFAULT 0`];

export const approvalPositionMigration: Migration = {
  version: 18,
  name: 'approval-position',
  statements: { sqlite: ADD_COLUMN, postgres: ADD_COLUMN },
};
