/**
 * Small helpers shared by the benchmarks: timing statistics, temp dirs, PostgreSQL
 * schemas and sizes, SQLite file sizes. Nothing here writes into the repository.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openNodeSqlite } from '../src/adapters/sql/node-sqlite.js';
import { pino, type Logger } from 'pino';
import type { BenchOptions } from './types.js';

export const silentLogger: Logger = pino({ level: 'silent' });

export interface Stats {
  count: number;
  mean: number;
  p50: number;
  p95: number;
  p99: number;
  min: number;
  max: number;
}

/** Nearest-rank percentiles over the samples (milliseconds in, milliseconds out). */
export function stats(samples: readonly number[]): Stats {
  if (samples.length === 0) throw new Error('no samples');
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
  return {
    count: sorted.length,
    mean: sorted.reduce((sum, value) => sum + value, 0) / sorted.length,
    p50: at(50),
    p95: at(95),
    p99: at(99),
    min: sorted[0]!,
    max: sorted.at(-1)!,
  };
}

/** Run `work` `warmup` times unmeasured, then `repetitions` times measured; milliseconds. */
export async function sample(work: () => Promise<unknown>, repetitions: number, warmup: number): Promise<number[]> {
  for (let index = 0; index < warmup; index++) await work();
  const samples: number[] = [];
  for (let index = 0; index < repetitions; index++) {
    const start = performance.now();
    await work();
    samples.push(performance.now() - start);
  }
  return samples;
}

/** A temp dir under os.tmpdir(), removed at the end of the bench run. */
export async function tempDir(options: BenchOptions, prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `vigil-bench-${prefix}-`));
  options.onCleanup(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** A fresh, never-used schema name, dropped at the end of the bench run. */
export function benchSchema(options: BenchOptions, url: string): string {
  const schema = `vigil_bench_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  options.onCleanup(() => dropSchema(url, schema));
  return schema;
}

export async function dropSchema(url: string, schema: string): Promise<void> {
  if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`refusing to drop odd schema name ${schema}`);
  await withClient(url, (client) => client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
}

/**
 * The data pages of each table of the schema: its main fork, its indexes' and its TOAST
 * table's (and TOAST index's), by table. Not the free-space and visibility maps, which
 * PostgreSQL creates on a table's first vacuums (24 KiB and 8 KiB at once, a few KiB a turn
 * when a small table gets them during a measurement) and which then grow by a byte per page:
 * bookkeeping, not what a turn stores. The same for every saver measured.
 */
const DATA_BYTES_BY_TABLE = `
  SELECT t.relname AS tablename,
         (pg_relation_size(t.oid, 'main')
          + coalesce((SELECT sum(pg_relation_size(i.indexrelid, 'main')) FROM pg_index i WHERE i.indrelid = t.oid), 0)
          + coalesce(pg_relation_size(t.reltoastrelid, 'main'), 0)
          + coalesce((SELECT sum(pg_relation_size(i.indexrelid, 'main')) FROM pg_index i WHERE i.indrelid = t.reltoastrelid), 0))::bigint AS bytes
  FROM pg_class t JOIN pg_namespace n ON n.oid = t.relnamespace
  WHERE n.nspname = $1 AND t.relkind = 'r'`;

/** Data bytes of every table of the schema, with its indexes and TOAST (see DATA_BYTES_BY_TABLE). */
export async function schemaBytes(url: string, schema: string): Promise<number> {
  return [...(await postgresTableBytes(url, schema)).values()].reduce((sum, bytes) => sum + bytes, 0);
}

/** Each table's data bytes with its indexes and TOAST (an index counts toward its table). */
export async function postgresTableBytes(url: string, schema: string): Promise<Map<string, number>> {
  return withClient(url, async (client) => {
    const result = await client.query<{ tablename: string; bytes: string }>(DATA_BYTES_BY_TABLE, [schema]);
    return new Map(result.rows.map((row) => [row.tablename, Number(row.bytes)]));
  });
}

/**
 * VACUUM every table of the schema, as autovacuum does on a live server: PostgreSQL keeps a
 * row's old versions (an updated run record, the thread's counters) until a vacuum makes
 * their space reusable. Without it, growth over a few turns counts space the next turns
 * would have reused.
 */
export async function vacuumSchema(url: string, schema: string): Promise<void> {
  await withClient(url, async (client) => {
    const tables = await client.query<{ tablename: string }>('SELECT tablename FROM pg_tables WHERE schemaname = $1', [schema]);
    for (const { tablename } of tables.rows) await client.query(`VACUUM ${client.escapeIdentifier(schema)}.${client.escapeIdentifier(tablename)}`);
  });
}

export async function analyzeSchema(url: string, schema: string): Promise<void> {
  await withClient(url, async (client) => {
    const tables = await client.query<{ tablename: string }>('SELECT tablename FROM pg_tables WHERE schemaname = $1', [schema]);
    for (const { tablename } of tables.rows) await client.query(`ANALYZE ${client.escapeIdentifier(schema)}.${client.escapeIdentifier(tablename)}`);
  });
}

export async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** undefined when PostgreSQL answers `select version()`, else why not. */
export async function postgresProblem(url: string): Promise<{ version?: string; problem?: string }> {
  try {
    const version = await withClient(url, async (client) => (await client.query<{ v: string }>('select current_setting($1) as v', ['server_version'])).rows[0]?.v);
    return { version: version ?? 'unknown' };
  } catch (error) {
    return { problem: error instanceof Error ? error.message || error.name : String(error) };
  }
}

/**
 * Bytes an SQLite database holds, WAL included: first fold the WAL into the main file
 * (from a second connection, between turns, when nobody else is in a transaction), then
 * the size of both files.
 */
export async function sqliteBytes(file: string): Promise<number> {
  const connection = openNodeSqlite(file);
  try {
    connection.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  } finally {
    connection.close();
  }
  return (await fileSize(file)) + (await fileSize(`${file}-wal`));
}

/** Each table's pages in bytes, its indexes counted toward it (dbstat, after a WAL checkpoint). */
export async function sqliteTableBytes(file: string): Promise<Map<string, number>> {
  const connection = openNodeSqlite(file);
  try {
    connection.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    const rows = connection
      .prepare(
        `SELECT coalesce(m.tbl_name, d.name) AS name, sum(d.pgsize) AS bytes
           FROM dbstat d LEFT JOIN sqlite_schema m ON m.name = d.name GROUP BY 1`,
      )
      .all() as Array<{ name: string; bytes: number }>;
    return new Map(rows.map((row) => [row.name, row.bytes]));
  } finally {
    connection.close();
  }
}

/** Checkpoints saved for a thread: `from` names the saver's table(s), with the thread's id as `thread_id` (LangGraph's savers: `checkpoints`). */
export async function sqliteCheckpointCount(file: string, threadId: string, from = 'checkpoints'): Promise<number> {
  const connection = openNodeSqlite(file, { readOnly: true });
  try {
    return (connection.prepare(`SELECT count(*) AS count FROM ${from} WHERE thread_id = ?`).get(threadId) as { count: number }).count;
  } finally {
    connection.close();
  }
}

export async function postgresCheckpointCount(url: string, schema: string, threadId: string, from = 'checkpoints'): Promise<number> {
  return withClient(url, async (client) => {
    await client.query(`SET search_path TO ${client.escapeIdentifier(schema)}`);
    const result = await client.query<{ count: string }>(`SELECT count(*) AS count FROM ${from} WHERE thread_id = $1`, [threadId]);
    return Number(result.rows[0]?.count ?? 0);
  });
}

async function fileSize(file: string): Promise<number> {
  try {
    return (await stat(file)).size;
  } catch {
    return 0;
  }
}

/** A full collection between groups, when the process can trigger one. */
export function collectGarbage(): void {
  gcFunction?.();
}

let gcFunction: (() => void) | undefined = (globalThis as { gc?: () => void }).gc;

/** Makes `collectGarbage` work without --expose-gc (V8 flag set at run time). */
export async function enableGc(): Promise<boolean> {
  if (gcFunction) return true;
  try {
    const v8 = await import('node:v8');
    const vm = await import('node:vm');
    v8.setFlagsFromString('--expose-gc');
    const gc: unknown = vm.runInNewContext('gc');
    if (typeof gc === 'function') gcFunction = gc as () => void;
  } catch {
    // No GC between groups; the figures are still valid, only noisier.
  }
  return gcFunction !== undefined;
}

export function round(value: number, digits = 3): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

/**
 * Options for a diagnostic script run on its own (turn-bytes, turn-breakdown, profile-turn),
 * with PostgreSQL at VIGIL_BENCH_DATABASE_URL or the local test database, and the cleanup
 * to run at its end.
 */
export function diagnosticOptions(progress: (message: string) => void = () => undefined): { options: BenchOptions; cleanup: () => Promise<void> } {
  const cleanups: (() => Promise<void>)[] = [];
  const options: BenchOptions = {
    quick: false,
    full: false,
    postgresUrl: process.env.VIGIL_BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
    onCleanup: (cleanup) => void cleanups.push(cleanup),
    progress,
  };
  const cleanup = async () => {
    for (const done of cleanups.reverse()) await done().catch(() => undefined);
  };
  return { options, cleanup };
}
