import type { SqlDialectName } from '../database.js';

/** One schema version: single statements per dialect (better-sqlite3 prepares one at a time). */
export interface Migration {
  version: number;
  name: string;
  statements: Readonly<Record<SqlDialectName, readonly string[]>>;
}
