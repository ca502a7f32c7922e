/**
 * Version 10: what the LangGraph Platform API (served beside /api) keeps that vigil's own
 * tables do not: a thread's free-form metadata, and each protocol run's assistant,
 * metadata and multitask strategy (the run itself is vigil's run, in `runs`, once it starts;
 * a run that resumes a waiting tool call follows the run the approvals start, `vigil_run_id`).
 */
import type { Migration } from './migration.js';

const threadMetadata = (timestamp: string) => `CREATE TABLE protocol_thread_metadata (
  thread_id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL,
  metadata TEXT NOT NULL,
  updated_at ${timestamp} NOT NULL
)`;

const runs = (timestamp: string) => `CREATE TABLE protocol_runs (
  run_id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL,
  thread_id TEXT NOT NULL,
  assistant_id TEXT NOT NULL,
  metadata TEXT NOT NULL,
  multitask_strategy TEXT NOT NULL,
  state TEXT NOT NULL,
  vigil_run_id TEXT,
  created_at ${timestamp} NOT NULL
)`;

const indexes = [
  `CREATE INDEX protocol_thread_metadata_user ON protocol_thread_metadata (user_id)`,
  `CREATE INDEX protocol_runs_thread ON protocol_runs (user_id, thread_id, created_at)`,
];

export const langgraphProtocolMigration: Migration = {
  version: 12,
  name: 'langgraph-protocol',
  statements: {
    sqlite: [threadMetadata('TEXT'), runs('TEXT'), ...indexes],
    postgres: [threadMetadata('timestamptz'), runs('timestamptz'), ...indexes],
  },
};
