/**
 * When each memory's text was last written. A memory replaced through the LangGraph
 * store (a put with its key) keeps its creation time and moves this one, as the store's
 * items do (`created_at` stays, `updated_at` moves); until now a replace reset
 * `created_at`. Memories written before this version start with both the same.
 * PostgreSQL makes the column NOT NULL once filled; SQLite cannot add that constraint to
 * an existing table, and every write sets the column there too.
 */
import type { Migration } from './migration.js';

export const memoryUpdatedAtMigration: Migration = {
  version: 20,
  name: 'memory-updated-at',
  statements: {
    sqlite: [`ALTER TABLE memories ADD COLUMN updated_at TEXT`, `UPDATE memories SET updated_at = created_at`],
    postgres: [`ALTER TABLE memories ADD COLUMN updated_at timestamptz`, `UPDATE memories SET updated_at = created_at`, `ALTER TABLE memories ALTER COLUMN updated_at SET NOT NULL`],
  },
};
