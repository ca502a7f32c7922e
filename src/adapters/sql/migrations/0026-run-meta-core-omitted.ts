/**
 * A run's meta without its core keys. Every run's meta repeated its row's trigger, id,
 * requested_at and correlation_id (166 of a user run's 168 meta bytes, every turn); a row
 * flagged here holds the other keys alone and a read rebuilds the core keys from the columns
 * (run-meta-codec.ts). Rows written before keep 0: their meta is whole and reads as it did.
 * The smallest flag each backend has for it: a smallint on PostgreSQL (two bytes), and on
 * SQLite an integer 0 or 1, which takes one byte (its type in the record header) and none
 * for its value.
 */
import type { Migration } from './migration.js';

export const runMetaCoreOmittedMigration: Migration = {
  version: 26,
  name: 'run-meta-core-omitted',
  statements: {
    sqlite: [`ALTER TABLE runs ADD COLUMN meta_core_omitted INTEGER NOT NULL DEFAULT 0`],
    postgres: [`ALTER TABLE runs ADD COLUMN meta_core_omitted smallint NOT NULL DEFAULT 0`],
  },
};
