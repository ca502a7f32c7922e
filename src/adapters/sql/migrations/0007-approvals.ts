/**
 * Version 7: tool calls waiting for a person's decision (I16). The unique (thread,
 * model message, tool call) key makes a replayed step find its requests instead of
 * asking twice; `execution` records a run of an approved call before and after it.
 */
import type { Migration } from './migration.js';

const approvals = (timestamp: string) => `CREATE TABLE tool_approvals (
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  thread_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  message_id TEXT NOT NULL,
  tool_call_id TEXT NOT NULL,
  tool TEXT NOT NULL,
  arguments TEXT NOT NULL,
  arguments_hash TEXT NOT NULL,
  attended INTEGER NOT NULL,
  requested_at ${timestamp} NOT NULL,
  expires_at ${timestamp} NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'edited', 'rejected', 'expired', 'superseded')),
  decided_by TEXT,
  channel TEXT,
  decided_at ${timestamp},
  message TEXT,
  edited_arguments TEXT,
  execution TEXT NOT NULL DEFAULT 'none' CHECK (execution IN ('none', 'started', 'done')),
  result TEXT,
  UNIQUE (thread_id, message_id, tool_call_id)
)`;

const indexes = [
  `CREATE INDEX tool_approvals_user ON tool_approvals (user_id, requested_at)`,
  `CREATE INDEX tool_approvals_pending ON tool_approvals (thread_id) WHERE status = 'pending'`,
];

export const approvalsMigration: Migration = {
  version: 7,
  name: 'approvals',
  statements: {
    sqlite: [approvals('TEXT'), ...indexes],
    postgres: [approvals('timestamptz'), ...indexes],
  },
};
