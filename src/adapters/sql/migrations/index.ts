/**
 * The ordered, versioned list of schema migrations, one file per version.
 * Append only: never edit or reorder an applied migration; add a new version instead.
 */
import { coreMigration } from './0001-core.js';
import type { Migration } from './migration.js';

export type { Migration } from './migration.js';

export const MIGRATIONS: readonly Migration[] = [coreMigration];
