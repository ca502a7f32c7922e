/**
 * The orphaned-run sweep looks for runs still marked running every half minute on every
 * instance: a partial index keeps that a lookup among the few unfinished runs, not a
 * scan of every run ever recorded.
 */
import type { Migration } from './migration.js';

const indexes = [`CREATE INDEX runs_running ON runs (started_at) WHERE status = 'running'`];

export const runningRunsIndexMigration: Migration = {
  version: 10,
  name: 'running-runs-index',
  statements: { sqlite: indexes, postgres: indexes },
};
