/**
 * Chooses the storage backend from the database URL: none means an SQLite file under the
 * data directory (no setup), `postgres://` or `postgresql://` means PostgreSQL.
 */
import type { SqlStorage } from './sql/sql-storage.js';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { VigilError } from '../domain/errors.js';
import { openPostgresStorage } from './sql/postgres-storage.js';
import { openSqliteStorage } from './sql/sqlite-storage.js';

export { openPostgresStorage } from './sql/postgres-storage.js';
export { openSqliteStorage } from './sql/sqlite-storage.js';

export const SQLITE_FILE_NAME = 'vigil.sqlite';

export async function openStorage(options: {
  databaseUrl?: string | undefined;
  dataDir: string;
  logger: Logger;
  postgresSchema?: string;
}): Promise<SqlStorage> {
  const url = options.databaseUrl;
  if (url === undefined || url === '') {
    await mkdir(options.dataDir, { recursive: true });
    const file = join(options.dataDir, SQLITE_FILE_NAME);
    options.logger.info({ file }, 'storage: SQLite');
    return openSqliteStorage({ file, logger: options.logger });
  }
  if (/^postgres(ql)?:\/\//i.test(url)) {
    options.logger.info({ schema: options.postgresSchema ?? 'public' }, 'storage: PostgreSQL');
    return openPostgresStorage({ connectionString: url, schema: options.postgresSchema, logger: options.logger });
  }
  // Never echo the URL: it may carry a password.
  throw new VigilError('CONFIG_INVALID', 'DATABASE_URL must start with postgres:// or postgresql:// (leave it unset for SQLite)');
}
