/**
 * The migrations a database has recorded, read without changing anything: no file, schema
 * or table is created and no migration applied (`vigil doctor` reports; `vigil migrate` and
 * the server's start change).
 */
import { existsSync } from 'node:fs';
import pg from 'pg';
import { openNodeSqlite } from './node-sqlite.js';

export interface RecordedMigration {
  version: number;
  name: string;
  appliedAt: string;
}

/** A connection attempt that hangs fails instead (as the storage's pools do). */
const CONNECT_TIMEOUT_MS = 10_000;

/** The SQLite file's recorded migrations; none when the file or its table does not exist yet. */
export function readSqliteMigrations(file: string): RecordedMigration[] {
  if (!existsSync(file)) return [];
  const database = openNodeSqlite(file, { readOnly: true });
  try {
    const table = database.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'vigil_migrations'").get();
    if (!table) return [];
    const rows = database.prepare('SELECT version, name, applied_at FROM vigil_migrations ORDER BY version').all() as Array<{ version: number; name: string; applied_at: string }>;
    return rows.map((row) => ({ version: Number(row.version), name: row.name, appliedAt: String(row.applied_at) }));
  } finally {
    database.close();
  }
}

/** The PostgreSQL schema's recorded migrations; none when the schema or its table does not exist yet. */
export async function readPostgresMigrations(connectionString: string, schema: string): Promise<RecordedMigration[]> {
  const client = new pg.Client({ connectionString, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  // A connection that breaks while idle would otherwise be an unhandled 'error'.
  client.on('error', () => undefined);
  await client.connect();
  try {
    const table = await client.query<{ found: string | null }>('SELECT to_regclass(format($1::text, $2::text)) AS found', ['%I.vigil_migrations', schema]);
    if (!table.rows[0]?.found) return [];
    const rows = await client.query<{ version: number; name: string; applied_at: Date | string }>(`SELECT version, name, applied_at FROM ${client.escapeIdentifier(schema)}.vigil_migrations ORDER BY version`);
    return rows.rows.map((row) => ({ version: Number(row.version), name: row.name, appliedAt: row.applied_at instanceof Date ? row.applied_at.toISOString() : String(row.applied_at) }));
  } finally {
    await client.end().catch(() => undefined);
  }
}
