/**
 * Kysely types of the autonomy tables (migration 0002), for `db.withTables<TimerTables>()`.
 * Timestamps as in database.ts: ISO text written, text (SQLite) or Date (pg) read.
 */
import type { NullableTimestamp, Timestamp } from './database.js';

export interface TimersTable {
  id: string;
  thread_id: string;
  user_id: string;
  agent_id: string;
  due_at: Timestamp;
  trigger_type: string;
  reason: string;
  attempt: number;
  state: string;
  state_reason: string | null;
  scheduled_against: NullableTimestamp;
  source_run_id: string | null;
  run_id: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  fired_at: NullableTimestamp;
}

export interface AutonomyThreadsTable {
  thread_id: string;
  user_id: string;
  /** 0 or 1 on both backends. */
  paused: number;
  last_user_message_at: NullableTimestamp;
  updated_at: Timestamp;
}

export interface AutonomyUsageTable {
  user_id: string;
  agent_id: string;
  /** The local day (YYYY-MM-DD) in the agent policy's time zone. */
  day: string;
  model_calls: number;
}

export type TimerTables = {
  timers: TimersTable;
  autonomy_threads: AutonomyThreadsTable;
  autonomy_usage: AutonomyUsageTable;
};
