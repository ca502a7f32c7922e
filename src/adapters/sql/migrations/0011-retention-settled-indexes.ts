/**
 * Version 10: indexes for the retention job over the tables of approvals, check-ins and
 * outbound webhook deliveries (versions 7–9), so that each small batch finds its old,
 * settled rows without scanning the table. Pending rows are never pruned, so the indexes
 * leave them out.
 */
import type { Migration } from './migration.js';

const indexes = [
  `CREATE INDEX tool_approvals_decided ON tool_approvals (decided_at) WHERE status <> 'pending'`,
  `CREATE INDEX check_ins_settled ON check_ins (updated_at) WHERE state <> 'pending'`,
  `CREATE INDEX outbound_deliveries_settled ON outbound_deliveries (updated_at) WHERE status <> 'pending'`,
];

export const retentionSettledIndexesMigration: Migration = {
  version: 11,
  name: 'retention-settled-indexes',
  statements: { sqlite: indexes, postgres: indexes },
};
