/**
 * Version 5: cron and one-shot schedules, and one row per fire. The unique
 * (schedule_id, scheduled_for) key makes each fire happen at most once, whichever
 * instance or restart delivers it (I7).
 */
import type { Migration } from './migration.js';

const fires = (timestamp: string) => `CREATE TABLE schedule_fires (
  id TEXT PRIMARY KEY,
  schedule_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  scheduled_for ${timestamp} NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'skipped')),
  reason TEXT,
  run_id TEXT,
  thread_id TEXT,
  started_at ${timestamp} NOT NULL,
  ended_at ${timestamp},
  UNIQUE (schedule_id, scheduled_for)
)`;

const schedules = (timestamp: string) => `CREATE TABLE schedules (
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  name TEXT NOT NULL,
  timing TEXT NOT NULL,
  target TEXT NOT NULL CHECK (target IN ('thread', 'new_thread')),
  thread_id TEXT,
  task TEXT NOT NULL,
  missed_policy TEXT NOT NULL CHECK (missed_policy IN ('skip', 'run_once')),
  enabled INTEGER NOT NULL,
  created_at ${timestamp} NOT NULL,
  updated_at ${timestamp} NOT NULL
)`;

const indexes = [
  `CREATE INDEX schedules_user ON schedules (user_id, created_at)`,
  `CREATE INDEX schedule_fires_schedule ON schedule_fires (schedule_id, scheduled_for)`,
];

export const schedulesMigration: Migration = {
  version: 5,
  name: 'schedules',
  statements: {
    sqlite: [schedules('TEXT'), fires('TEXT'), ...indexes],
    postgres: [schedules('timestamptz'), fires('timestamptz'), ...indexes],
  },
};
