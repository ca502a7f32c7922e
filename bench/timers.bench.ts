/**
 * Follow-up timers at scale: how late a timer fires (lag = delivered − due, p50/p99)
 * while 10,000 or 100,000 other timers are pending, a burst of timers all due at once,
 * and what one pending timer costs (database bytes for its row and its job, and the
 * scheduler's heap: nothing per timer is kept in memory).
 *
 * SQLite: the embedded scheduler as the server builds it (it sleeps until the next due
 * time). PostgreSQL: pg-boss, which polls every 0.5 s — its lag is mostly that polling —
 * and the job table vigil uses for due timers instead.
 *
 *   import { benchTimers } from './timers.bench.js';
 *   const rows = await benchTimers({ quick: false });            // PostgreSQL from VIGIL_BENCH_DATABASE_URL / VIGIL_TEST_DATABASE_URL, if it answers
 *   const rows = await benchTimers({ quick: true, postgresUrl: undefined }); // SQLite only
 *
 * `options` is compatible with bench/types.ts BenchOptions (quick, postgresUrl, progress).
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import { PgBoss } from 'pg-boss';
import { EmbeddedJobQueue } from '../src/adapters/jobs/embedded-job-queue.js';
import { openJobQueue } from '../src/adapters/jobs/job-queue-factory.js';
import type { JobTables } from '../src/adapters/jobs/jobs-table.js';
import { PgBossJobQueue, pgBossSchemaFor } from '../src/adapters/jobs/pg-boss-job-queue.js';
import { PostgresListener } from '../src/adapters/sql/postgres-listener.js';
import type { Database } from '../src/adapters/sql/database.js';
import { openPostgresStorage } from '../src/adapters/sql/postgres-storage.js';
import type { SqlStorage } from '../src/adapters/sql/sql-storage.js';
import { openSqliteStorage } from '../src/adapters/sql/sqlite-storage.js';
import type { TimerTables } from '../src/adapters/sql/timer-tables.js';
import { FOLLOW_UP_QUEUE } from '../src/app/autonomy/autonomy-dependencies.js';
import { CHECK_IN_QUEUE } from '../src/app/check-ins/check-in-service.js';
import { SCHEDULE_QUEUE } from '../src/app/schedules/schedule-service.js';
import { loadConfig } from '../src/config.js';
import type { DueJob, JobQueue } from '../src/app/job-queue.js';
import { collectGarbage, dropSchema, enableGc, postgresProblem, round, schemaBytes, silentLogger, sqliteBytes, stats } from './util.js';

export interface TimerBenchRow {
  group: string;
  name: string;
  value: number;
  unit: string;
  note?: string;
}

export interface TimerBenchOptions {
  quick?: boolean;
  /** Pending timers to measure with (default 10,000 and 100,000; quick: 10,000). */
  sizes?: number[];
  /** Only the PostgreSQL job table (vigil's due-timer path), e.g. to try its concurrency. */
  jobTableOnly?: boolean;
  /** Handlers the job table runs at once per instance (default: the queue's own, 4). */
  jobTableConcurrency?: number;
  /** The embedded scheduler's due timers at once, one row each (default: the server's, VIGIL_TIMER_CONCURRENCY's default). */
  embeddedConcurrency?: number[];
  /** SQLite only (no PostgreSQL rows). */
  sqliteOnly?: boolean;
  /** PostgreSQL to measure pg-boss on; omitted: the usual environment variables, if PostgreSQL answers; undefined: SQLite only. */
  postgresUrl?: string | undefined;
  progress?: (message: string) => void;
}

const GROUP = 'timers';
const clock = { now: () => new Date() };

export async function benchTimers(options: TimerBenchOptions = {}): Promise<TimerBenchRow[]> {
  const progress = options.progress ?? (() => undefined);
  await enableGc(); // heap per timer is read after a full collection
  const sizes = options.sizes ?? (options.quick ? [10_000] : [10_000, 100_000]);
  const probes = options.quick ? 100 : 300;
  const burst = options.quick ? 300 : 1_000;
  const postgresUrl = options.sqliteOnly ? undefined : 'postgresUrl' in options ? options.postgresUrl : await defaultPostgres();
  const rows: TimerBenchRow[] = [];
  for (const pending of options.jobTableOnly ? [] : sizes) {
    progress(`timers: SQLite, ${pending.toLocaleString('en')} pending`);
    for (const concurrency of options.embeddedConcurrency ?? [undefined]) rows.push(...(await onSqlite(pending, probes, burst, concurrency)));
  }
  if (postgresUrl === undefined) {
    rows.push({ group: GROUP, name: 'pg-boss rows skipped', value: Number.NaN, unit: '', note: 'PostgreSQL did not answer' });
    return rows;
  }
  for (const pending of sizes) {
    if (!options.jobTableOnly) {
      progress(`timers: PostgreSQL (pg-boss), ${pending.toLocaleString('en')} pending`);
      rows.push(...(await onPostgres(postgresUrl, pending, probes, burst)));
    }
    progress(`timers: PostgreSQL (due-timer job table), ${pending.toLocaleString('en')} pending`);
    rows.push(...(await onPostgresJobTable(postgresUrl, pending, probes, burst, options.jobTableConcurrency)));
  }
  return rows;
}

// ---------- the two backends ----------

async function onSqlite(pending: number, probes: number, burst: number, concurrency?: number): Promise<TimerBenchRow[]> {
  const dir = await mkdtemp(join(tmpdir(), 'vigil-bench-timers-'));
  const file = join(dir, 'vigil.sqlite');
  const storage = await openSqliteStorage({ file, logger: silentLogger });
  try {
    const before = await sqliteBytes(file);
    const heap = await heapPerTimer(() => seedPending(storage, pending, 'sqlite'), pending);
    const bytes = (await sqliteBytes(file)) - before;
    // As `npm start` builds it (job-queue-factory.ts): the due timers on their own scheduler, VIGIL_TIMER_CONCURRENCY at once.
    const timerConcurrency = concurrency ?? loadConfig({}).timerConcurrency;
    const queue = openJobQueue({ storage, databaseUrl: undefined, schema: 'main', clock, logger: silentLogger, timerConcurrency });
    const measured = await measureLag(queue, probes, burst);
    return report(`sqlite embedded (${timerConcurrency} at once${concurrency ? '' : ', the default'})`, pending, measured, bytes / pending, heap);
  } finally {
    await storage.close();
    await rm(dir, { recursive: true, force: true });
  }
}

async function onPostgres(url: string, pending: number, probes: number, burst: number): Promise<TimerBenchRow[]> {
  const schema = `vigil_bench_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  const bossSchema = pgBossSchemaFor(schema);
  const storage = await openPostgresStorage({ connectionString: url, schema, logger: silentLogger });
  const queue = new PgBossJobQueue({ connectionString: url, schema: bossSchema, logger: silentLogger });
  try {
    await queue.start(); // installs pg-boss's schema
    await queue.schedule({ queue: FOLLOW_UP_QUEUE, key: 'warm-up', dueAt: new Date(Date.now() + 86_400_000), payload: {} });
    const before = (await schemaBytes(url, schema)) + (await schemaBytes(url, bossSchema));
    const heap = await heapPerTimer(() => seedPending(storage, pending, 'postgres', { url, schema: bossSchema }), pending);
    const bytes = (await schemaBytes(url, schema)) + (await schemaBytes(url, bossSchema)) - before;
    const measured = await measureLag(queue, probes, burst);
    return report('postgres pg-boss', pending, measured, bytes / pending, heap);
  } finally {
    await queue.stop();
    await storage.close();
    await dropSchema(url, schema);
    await dropSchema(url, bossSchema);
  }
}

/** vigil's path for due timers on PostgreSQL: the job table, claimed with SKIP LOCKED, woken by NOTIFY. */
async function onPostgresJobTable(url: string, pending: number, probes: number, burst: number, concurrency?: number): Promise<TimerBenchRow[]> {
  const schema = `vigil_bench_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  const storage = await openPostgresStorage({ connectionString: url, schema, logger: silentLogger });
  const listener = await PostgresListener.open(url, silentLogger);
  try {
    const before = await schemaBytes(url, schema);
    const heap = await heapPerTimer(() => seedPending(storage, pending, 'postgres-table'), pending);
    const bytes = (await schemaBytes(url, schema)) - before;
    const queue = new EmbeddedJobQueue({ context: storage.context, clock, logger: silentLogger, wakeUps: { listener, schema }, ...(concurrency ? { concurrency } : {}) });
    const measured = await measureLag(queue, probes, burst);
    return report(`postgres job table${concurrency ? ` (${concurrency} at once)` : ''}`, pending, measured, bytes / pending, heap);
  } finally {
    await listener.close();
    await storage.close();
    await dropSchema(url, schema);
  }
}

function report(label: string, pending: number, measured: { lag: number[]; burstLag: number[]; burstSpanMs: number }, bytesPerTimer: number, heapPerTimer: number): TimerBenchRow[] {
  const n = pending.toLocaleString('en');
  const lag = stats(measured.lag);
  const burstLag = stats(measured.burstLag);
  return [
    { group: GROUP, name: `${label}: lag p50, ${n} pending`, value: round(lag.p50, 1), unit: 'ms', note: `${lag.count} probe timers due at spread times` },
    { group: GROUP, name: `${label}: lag p99, ${n} pending`, value: round(lag.p99, 1), unit: 'ms' },
    { group: GROUP, name: `${label}: burst of ${measured.burstLag.length} due at once, lag p50`, value: round(burstLag.p50, 1), unit: 'ms', note: `${n} pending besides` },
    { group: GROUP, name: `${label}: burst of ${measured.burstLag.length} due at once, lag p99`, value: round(burstLag.p99, 1), unit: 'ms', note: `all delivered within ${Math.round(measured.burstSpanMs)} ms (no-op handler)` },
    { group: GROUP, name: `${label}: database bytes per pending timer, ${n} pending`, value: Math.round(bytesPerTimer), unit: 'B', note: 'timer row + job row + their indexes' },
    { group: GROUP, name: `${label}: scheduler heap per pending timer, ${n} pending`, value: round(heapPerTimer, 1), unit: 'B', note: 'heap growth after writing them, after GC: the scheduler keeps nothing per timer' },
  ];
}

// ---------- seeding and measuring ----------

/** Pending follow-ups due tomorrow: a timer row and its job each, written in bulk as the scheduler writes them one by one. */
async function seedPending(storage: SqlStorage, count: number, backend: 'sqlite' | 'postgres' | 'postgres-table', boss?: { url: string; schema: string }): Promise<void> {
  const dueAt = new Date(Date.now() + 86_400_000).toISOString();
  const now = new Date().toISOString();
  const batch = backend === 'sqlite' ? 500 : 1_000;
  const pgBoss = boss ? new PgBoss({ connectionString: boss.url, schema: boss.schema, supervise: false, schedule: false, migrate: false, max: 2 }) : undefined;
  await pgBoss?.start();
  try {
    for (let start = 0; start < count; start += batch) {
      const ids = Array.from({ length: Math.min(batch, count - start) }, () => randomUUID());
      await storage.context.transaction(async (trx) => {
        const db = trx.withTables<TimerTables & JobTables>() as unknown as Kysely<Database & TimerTables & JobTables>;
        await db
          .insertInto('timers')
          .values(ids.map((id) => ({ id, thread_id: randomUUID(), user_id: 'bench', agent_id: 'bench', due_at: dueAt, trigger_type: 'check_in', reason: 'bench', attempt: 1, state: 'pending', state_reason: null, scheduled_against: null, source_run_id: null, run_id: null, created_at: now, updated_at: now, fired_at: null })))
          .execute();
        if (backend === 'sqlite' || backend === 'postgres-table') {
          await db
            .insertInto('vigil_jobs')
            .values(ids.map((id) => ({ id: randomUUID(), queue: FOLLOW_UP_QUEUE, key: id, due_at: dueAt, payload: JSON.stringify({ timerId: id }), state: 'pending', attempt: 0, lease_until: null, claimed_by: null, last_error: null, created_at: now, updated_at: now })))
            .execute();
        }
      });
      if (pgBoss) await pgBoss.insert(FOLLOW_UP_QUEUE, ids.map((id) => ({ data: { timerId: id }, singletonKey: id, startAfter: new Date(dueAt) })));
    }
  } finally {
    await pgBoss?.stop({ graceful: false });
  }
}

async function heapPerTimer(seed: () => Promise<void>, count: number): Promise<number> {
  collectGarbage();
  const before = process.memoryUsage().heapUsed;
  await seed();
  collectGarbage();
  return Math.max(0, process.memoryUsage().heapUsed - before) / count;
}

/**
 * Probe timers due at spread times over the next seconds, then a burst all due at one
 * instant, each delivered to a handler that only records when it ran.
 */
async function measureLag(queue: JobQueue, probes: number, burst: number): Promise<{ lag: number[]; burstLag: number[]; burstSpanMs: number }> {
  const delivered = new Map<string, number>();
  await queue.work(FOLLOW_UP_QUEUE, async (job: DueJob) => {
    if (job.payload.probe === true) delivered.set(job.key, Date.now() - Date.parse(job.dueAt));
  });
  // The server works every due-timer queue: one claim looks at all of them.
  for (const other of [CHECK_IN_QUEUE, SCHEDULE_QUEUE]) await queue.work(other, async () => undefined);
  await queue.start();
  const spreadMs = 3_000;
  // Scheduling finishes well before the first probe is due: the lag measured is the scheduler's, not the writer's.
  const start = Date.now() + 2_000 + probes * 25; // room for a loaded machine
  for (let index = 0; index < probes; index++) {
    await queue.schedule({ queue: FOLLOW_UP_QUEUE, key: `probe-${index}`, dueAt: new Date(start + Math.random() * spreadMs), payload: { probe: true } });
  }
  if (Date.now() > start) throw new Error('timers bench: scheduling the probes took longer than planned');
  await until(() => delivered.size >= probes, spreadMs + 30_000);
  const lag = [...delivered.values()];
  delivered.clear();

  const burstAt = Date.now() + 2_000 + burst * 25; // all written before any is due
  for (let index = 0; index < burst; index++) await queue.schedule({ queue: FOLLOW_UP_QUEUE, key: `burst-${index}`, dueAt: new Date(burstAt), payload: { probe: true } });
  await until(() => delivered.size >= burst, 120_000);
  const burstLag = [...delivered.values()];
  await queue.stop();
  return { lag, burstLag, burstSpanMs: Math.max(...burstLag) };
}

async function until(condition: () => boolean, timeoutMs: number): Promise<void> {
  const start = Date.now();
  while (!condition()) {
    if (Date.now() - start > timeoutMs) throw new Error('timers bench: deliveries timed out');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function defaultPostgres(): Promise<string | undefined> {
  const url = process.env.VIGIL_BENCH_DATABASE_URL ?? process.env.VIGIL_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  return (await postgresProblem(url)).problem === undefined ? url : undefined;
}

// `npx tsx bench/timers.bench.ts [--quick]` runs this group alone.
if (import.meta.url === `file://${process.argv[1]}`) {
  const pending = process.argv.find((argument) => argument.startsWith('--pending='));
  const concurrency = process.argv.find((argument) => argument.startsWith('--job-table-concurrency='));
  const embedded = process.argv.find((argument) => argument.startsWith('--embedded-concurrency='));
  benchTimers({
    sqliteOnly: process.argv.includes('--sqlite-only'),
    ...(embedded ? { embeddedConcurrency: embedded.slice('--embedded-concurrency='.length).split(',').map(Number) } : {}),
    quick: process.argv.includes('--quick'),
    jobTableOnly: process.argv.includes('--job-table-only'),
    ...(concurrency ? { jobTableConcurrency: Number(concurrency.slice('--job-table-concurrency='.length)) } : {}),
    ...(pending ? { sizes: [Number(pending.slice('--pending='.length))] } : {}),
    progress: (message) => process.stderr.write(`${message}\n`) }).then(
    (rows) => {
      for (const row of rows) console.log(`${row.name.padEnd(80)} ${String(row.value).padStart(10)} ${row.unit}${row.note ? `   (${row.note})` : ''}`);
    },
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
