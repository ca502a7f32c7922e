/**
 * Version 8: check-ins the agent sets itself (schedule_check_in). A timer of their own
 * kind, apart from follow-up timers: a person's message never cancels one. A check-in
 * leaves `pending` by one conditional update, so it fires at most once (I7).
 */
import type { Migration } from './migration.js';

const checkIns = (timestamp: string) => `CREATE TABLE check_ins (
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  thread_id TEXT NOT NULL,
  due_at ${timestamp} NOT NULL,
  reason TEXT NOT NULL,
  set_at ${timestamp} NOT NULL,
  set_by_run_id TEXT,
  state TEXT NOT NULL CHECK (state IN ('pending', 'fired', 'cancelled', 'skipped')),
  state_reason TEXT,
  run_id TEXT,
  fired_at ${timestamp},
  updated_at ${timestamp} NOT NULL
)`;

const indexes = [`CREATE INDEX check_ins_thread ON check_ins (thread_id, due_at)`];

export const checkInsMigration: Migration = {
  version: 8,
  name: 'check-ins',
  statements: {
    sqlite: [checkIns('TEXT'), ...indexes],
    postgres: [checkIns('timestamptz'), ...indexes],
  },
};
