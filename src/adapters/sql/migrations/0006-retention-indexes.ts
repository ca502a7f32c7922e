/**
 * Indexes for the retention job: it deletes old rows in small batches, and each batch
 * must find them without scanning the table.
 */
import type { Migration } from './migration.js';

const indexes = [
  `CREATE INDEX runs_ended ON runs (ended_at) WHERE ended_at IS NOT NULL`,
  `CREATE INDEX timers_settled ON timers (updated_at) WHERE state <> 'pending'`,
  `CREATE INDEX hook_deliveries_received ON hook_deliveries (received_at)`,
];

export const retentionIndexesMigration: Migration = {
  version: 6,
  name: 'retention-indexes',
  statements: { sqlite: indexes, postgres: indexes },
};
