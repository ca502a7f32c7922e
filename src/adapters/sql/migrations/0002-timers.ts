/**
 * Version 2: autonomy. Follow-up timers, each thread's autonomy state (paused, and when
 * the last real user message was received), the daily model-call budget, and — on
 * SQLite only — the table the embedded job scheduler works from (PostgreSQL uses
 * pg-boss, which keeps its own tables in its own schema).
 */
import type { Migration } from './migration.js';

const timers = (timestamp: string) => `CREATE TABLE timers (
  id TEXT PRIMARY KEY,
  thread_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  due_at ${timestamp} NOT NULL,
  trigger_type TEXT NOT NULL,
  reason TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'fired', 'cancelled', 'dropped', 'skipped')),
  state_reason TEXT,
  scheduled_against ${timestamp},
  source_run_id TEXT,
  run_id TEXT,
  created_at ${timestamp} NOT NULL,
  updated_at ${timestamp} NOT NULL,
  fired_at ${timestamp}
)`;

const autonomyThreads = (timestamp: string) => `CREATE TABLE autonomy_threads (
  thread_id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL,
  paused INTEGER NOT NULL DEFAULT 0,
  last_user_message_at ${timestamp},
  updated_at ${timestamp} NOT NULL
)`;

const autonomyUsage = `CREATE TABLE autonomy_usage (
  user_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  day TEXT NOT NULL,
  model_calls INTEGER NOT NULL,
  PRIMARY KEY (user_id, agent_id, day)
)`;

const timerIndexes = [
  // At most one pending follow-up per thread, whatever races: the database says so.
  `CREATE UNIQUE INDEX timers_one_pending_per_thread ON timers (thread_id) WHERE state = 'pending'`,
  `CREATE INDEX timers_thread_created ON timers (thread_id, created_at)`,
  `CREATE INDEX timers_thread_fired ON timers (thread_id, fired_at) WHERE state = 'fired'`,
  // The safety sweep's two questions: pending ones long overdue, fires whose run never ended.
  `CREATE INDEX timers_pending_due ON timers (due_at) WHERE state = 'pending'`,
  `CREATE INDEX timers_fired_at ON timers (fired_at) WHERE state = 'fired'`,
];

export const timersMigration: Migration = {
  version: 2,
  name: 'autonomy_timers',
  statements: {
    sqlite: [
      timers('TEXT'),
      ...timerIndexes,
      autonomyThreads('TEXT'),
      autonomyUsage,
      `CREATE TABLE vigil_jobs (
        id TEXT PRIMARY KEY,
        queue TEXT NOT NULL,
        key TEXT NOT NULL,
        due_at TEXT NOT NULL,
        payload TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('pending', 'active', 'failed')),
        attempt INTEGER NOT NULL DEFAULT 0,
        lease_until TEXT,
        claimed_by TEXT,
        last_error TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      )`,
      // "At most one pending job per (queue, key)"; a job in flight does not block the next one.
      `CREATE UNIQUE INDEX vigil_jobs_pending_key ON vigil_jobs (queue, key) WHERE state = 'pending'`,
      // Per queue, by due time: "what is due" and "when is the next one" read a few index entries, however many are pending.
      `CREATE INDEX vigil_jobs_due ON vigil_jobs (queue, due_at) WHERE state = 'pending'`,
      `CREATE INDEX vigil_jobs_lease ON vigil_jobs (lease_until) WHERE state = 'active'`,
    ],
    postgres: [timers('timestamptz'), ...timerIndexes, autonomyThreads('timestamptz'), autonomyUsage],
  },
};
