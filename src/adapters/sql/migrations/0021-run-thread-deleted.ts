/**
 * A run record whose thread was deleted. Run records stay as the record of what happened,
 * but they named their thread by id alone, and the LangGraph protocol lets a client choose
 * a thread's id: a thread made again with a deleted thread's id listed that thread's runs as
 * its own (and took its newest run for its own). Deleting a thread now marks its runs, in
 * the same transaction; a thread's run list leaves marked runs out.
 */
import type { Migration } from './migration.js';

const STATEMENTS = [`ALTER TABLE runs ADD COLUMN thread_deleted INTEGER NOT NULL DEFAULT 0`];

export const runThreadDeletedMigration: Migration = {
  version: 21,
  name: 'run-thread-deleted',
  statements: { sqlite: STATEMENTS, postgres: STATEMENTS },
};
