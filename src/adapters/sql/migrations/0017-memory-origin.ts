/**
 * Who wrote each memory: `api` (the person, or their app, through vigil's API or the
 * LangGraph store) or `agent` (the agent's memory_write tool, in the run and thread named
 * beside it). Memories written before this version have no recorded origin (NULL).
 */
import type { Migration } from './migration.js';

const ADD_COLUMNS = [
  `ALTER TABLE memories ADD COLUMN origin TEXT CHECK (origin IN ('api', 'agent'))`,
  `ALTER TABLE memories ADD COLUMN run_id TEXT`,
  `ALTER TABLE memories ADD COLUMN thread_id TEXT`,
];

export const memoryOriginMigration: Migration = {
  version: 17,
  name: 'memory-origin',
  statements: { sqlite: ADD_COLUMNS, postgres: ADD_COLUMNS },
};
