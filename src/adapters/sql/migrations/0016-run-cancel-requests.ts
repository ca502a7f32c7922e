/**
 * Cancel requests between instances on PostgreSQL, kept for a while as well as sent: a
 * NOTIFY is heard only by the listeners connected when it is sent, so an instance whose
 * listener was reconnecting looks here once it is back for the requests it may have missed.
 * SQLite runs one process: a cancel never has to leave it, nothing to create.
 */
import type { Migration } from './migration.js';

export const runCancelRequestsMigration: Migration = {
  version: 16,
  name: 'run-cancel-requests',
  statements: {
    sqlite: [],
    postgres: [
      `CREATE TABLE run_cancel_requests (run_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, requested_at timestamptz NOT NULL DEFAULT now())`,
      `CREATE INDEX run_cancel_requests_requested ON run_cancel_requests (requested_at)`,
    ],
  },
};
