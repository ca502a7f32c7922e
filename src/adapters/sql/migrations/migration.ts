import type { SqlDialectName } from '../database.js';

/** One schema version: single statements per dialect (SQLite prepares one at a time). */
export interface Migration {
  version: number;
  name: string;
  statements: Readonly<Record<SqlDialectName, readonly string[]>>;
}
