/**
 * Due timers on PostgreSQL leave pg-boss: follow-ups, check-ins and schedule fires are jobs
 * in `vigil_jobs` (the table the embedded queue uses on SQLite), claimed with
 * `FOR UPDATE SKIP LOCKED` and woken by NOTIFY. pg-boss measured a p99 lag of seconds with
 * 100,000 pending (its polling, and its fetch over a large job table); this path answers
 * "what is due" from a partial index by due time (bench/timers.bench.ts, README).
 */
import type { Migration } from './migration.js';

export const dueTimerJobsMigration: Migration = {
  version: 15,
  name: 'due-timer-jobs',
  statements: {
    sqlite: [], // vigil_jobs exists since 0002
    postgres: [
      `CREATE TABLE vigil_jobs (
        id TEXT PRIMARY KEY,
        queue TEXT NOT NULL,
        key TEXT NOT NULL,
        due_at timestamptz NOT NULL,
        payload TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('pending', 'active', 'failed')),
        attempt INTEGER NOT NULL DEFAULT 0,
        lease_until timestamptz,
        claimed_by TEXT,
        last_error TEXT,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      )`,
      `CREATE UNIQUE INDEX vigil_jobs_pending_key ON vigil_jobs (queue, key) WHERE state = 'pending'`,
      `CREATE INDEX vigil_jobs_due ON vigil_jobs (queue, due_at) WHERE state = 'pending'`,
      `CREATE INDEX vigil_jobs_lease ON vigil_jobs (lease_until) WHERE state = 'active'`,
    ],
  },
};
