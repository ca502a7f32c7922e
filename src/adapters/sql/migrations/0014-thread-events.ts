/**
 * The cross-instance event bus on PostgreSQL (I15): each thread's events are numbered by a
 * counter row (taken under its row lock, so ids follow commit order) and kept for a
 * bounded replay window — a client that reconnects to any instance resumes after the last
 * id it saw, and an event too large for NOTIFY's 8,000 bytes is fetched from here by id.
 * SQLite runs one process and keeps its replay window in memory: nothing to create.
 */
import type { Migration } from './migration.js';

export const threadEventsMigration: Migration = {
  version: 14,
  name: 'thread-events',
  statements: {
    sqlite: [],
    postgres: [
      `CREATE TABLE thread_event_counters (thread_id TEXT PRIMARY KEY, last_id BIGINT NOT NULL)`,
      `CREATE TABLE thread_events (thread_id TEXT NOT NULL, id BIGINT NOT NULL, payload TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT now(), PRIMARY KEY (thread_id, id))`,
      `CREATE INDEX thread_events_created ON thread_events (created_at)`,
    ],
  },
};
