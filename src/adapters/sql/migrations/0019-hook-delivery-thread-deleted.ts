/**
 * A webhook delivery whose task was in a thread since deleted. A retried delivery is told
 * from a replay by whether its run added its task to the thread; deleting the thread took
 * that evidence with it, so a replay of an accepted delivery was taken for a retry, failed
 * on the missing thread, had its record forgotten, and the next replay ran the task again.
 * Deleting a thread now marks, in the same transaction, the deliveries whose task it held:
 * their records stay, and a replay stays refused. The index finds a run's delivery.
 */
import type { Migration } from './migration.js';

const STATEMENTS = [
  `ALTER TABLE hook_deliveries ADD COLUMN thread_deleted INTEGER NOT NULL DEFAULT 0`,
  `CREATE INDEX hook_deliveries_run ON hook_deliveries (run_id)`,
];

export const hookDeliveryThreadDeletedMigration: Migration = {
  version: 19,
  name: 'hook-delivery-thread-deleted',
  statements: { sqlite: STATEMENTS, postgres: STATEMENTS },
};
