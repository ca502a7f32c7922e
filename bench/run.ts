/**
 * `npm run bench [-- --quick] [-- --only <group>[,<group>]]`
 *
 * Runs every benchmark group in sequence and prints a table to stdout (progress goes to
 * stderr). Figures only: no thresholds, no pass/fail. The machine is shared and small,
 * so compare variants within one run (the ratios), not across runs. Writes nothing into
 * the repository: databases live in os.tmpdir() and in random PostgreSQL schemas, both
 * removed at the end.
 */
import { readFile } from 'node:fs/promises';
import { cpus, freemem, loadavg, totalmem } from 'node:os';
import { createRequire } from 'node:module';
import { openNodeSqlite } from '../src/adapters/sql/node-sqlite.js';
import { benchFiltering } from './filtering.bench.js';
import { benchHistory } from './history.bench.js';
import { benchTurns } from './turn.bench.js';
import { benchEnvelope } from './envelope.bench.js';
import { benchTimers } from './timers.bench.js';
import { benchContextTokens } from './context-tokens.bench.js';
import { benchMemoryRecall } from './memory-recall.bench.js';
import type { Bench, BenchOptions, BenchRow } from './types.js';
import { collectGarbage, enableGc, postgresProblem, round } from './util.js';

const GROUPS: Record<string, Bench> = {
  filtering: benchFiltering,
  history: benchHistory,
  turn: benchTurns,
  envelope: benchEnvelope,
  timers: benchTimers,
  context: benchContextTokens,
  memory: benchMemoryRecall,
};

interface Flags {
  quick: boolean;
  full: boolean;
  only: string[] | undefined;
}

function parseFlags(argv: readonly string[]): Flags {
  const flags: Flags = { quick: false, full: false, only: undefined };
  for (let index = 0; index < argv.length; index++) {
    const arg = argv[index]!;
    if (arg === '--quick') flags.quick = true;
    else if (arg === '--full') flags.full = true;
    else if (arg === '--only' || arg.startsWith('--only=')) {
      const value = arg === '--only' ? argv[++index] : arg.slice('--only='.length);
      if (!value) throw new Error('--only needs a group name');
      flags.only = value.split(',').map((name) => name.trim()).filter(Boolean);
    } else if (arg === '--help' || arg === '-h') {
      console.log(`usage: npm run bench -- [--quick] [--full] [--only ${Object.keys(GROUPS).join('|')}[,…]]`);
      process.exit(0);
    } else throw new Error(`unknown argument ${arg} (try --help)`);
  }
  for (const name of flags.only ?? []) if (!(name in GROUPS)) throw new Error(`unknown group "${name}": one of ${Object.keys(GROUPS).join(', ')}`);
  return flags;
}

async function main(): Promise<number> {
  const started = performance.now();
  let flags: Flags;
  try {
    flags = parseFlags(process.argv.slice(2));
  } catch (error) {
    console.error(`bench: ${error instanceof Error ? error.message : String(error)}`);
    return 2;
  }
  const postgresUrl = process.env.VIGIL_BENCH_DATABASE_URL ?? process.env.VIGIL_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const postgres = await postgresProblem(postgresUrl);
  const gc = await enableGc();
  const cleanups: (() => Promise<void>)[] = [];
  const options: BenchOptions = {
    quick: flags.quick,
    full: flags.full,
    postgresUrl: postgres.problem === undefined ? postgresUrl : undefined,
    onCleanup: (cleanup) => void cleanups.push(cleanup),
    progress: (message) => process.stderr.write(`[bench ${elapsed(started)}] ${message}\n`),
  };

  console.log(await machineInfo(flags, postgres, gc, postgresUrl));
  let failed = false;
  try {
    for (const [group, bench] of Object.entries(GROUPS)) {
      if (flags.only && !flags.only.includes(group)) continue;
      collectGarbage();
      const groupStart = performance.now();
      options.progress(`${group}: start`);
      let rows: BenchRow[];
      try {
        rows = await bench(options);
      } catch (error) {
        failed = true;
        rows = [{ group, name: 'FAILED', value: Number.NaN, unit: '', note: error instanceof Error ? (error.stack ?? error.message) : String(error) }];
      }
      console.log(formatGroup(group, rows, performance.now() - groupStart));
    }
  } finally {
    // Last registered first: close a database before removing its directory or schema.
    for (const cleanup of cleanups.reverse()) {
      await cleanup().catch((error: unknown) => process.stderr.write(`[bench] cleanup failed: ${String(error)}\n`));
    }
  }
  console.log(`\ntotal runtime ${elapsed(started)}${failed ? ' — a group FAILED (see above)' : ''}`);
  return failed ? 1 : 0;
}


// ---------- output ----------

async function machineInfo(flags: Flags, postgres: { version?: string; problem?: string }, gc: boolean, postgresUrl: string): Promise<string> {
  const cpuList = cpus();
  const memory = openNodeSqlite(':memory:');
  const sqliteVersion = (memory.prepare('select sqlite_version() as v').get() as { v: string }).v;
  memory.close();
  const require = createRequire(import.meta.url);
  const versionOf = async (name: string) => {
    try {
      // The package's own package.json, found next to its resolved entry point.
      let dir = require.resolve(name);
      for (let depth = 0; depth < 6; depth++) {
        dir = dir.slice(0, dir.lastIndexOf('/'));
        try {
          const manifest = JSON.parse(await readFile(`${dir}/package.json`, 'utf8')) as { name?: string; version?: string };
          if (manifest.name === name) return manifest.version ?? '?';
        } catch {
          // keep climbing
        }
      }
    } catch {
      // not installed
    }
    return '?';
  };
  const lines = [
    '# vigil bench',
    `mode        ${flags.quick ? 'QUICK (smoke sizes)' : flags.full ? 'full, with the slow extremes' : 'standard (--full adds the slow extremes)'}${flags.only ? `, only ${flags.only.join(', ')}` : ''}`,
    `machine     ${cpuList.length} cpus × ${cpuList[0]?.model.trim() ?? 'unknown'}; ${round(totalmem() / 2 ** 30, 1)} GiB RAM (${round(freemem() / 2 ** 30, 1)} free); load ${loadavg().map((value) => value.toFixed(2)).join(' ')}`,
    `runtime     node ${process.version} ${process.platform}/${process.arch}; GC between groups: ${gc ? 'yes' : 'no'}`,
    `libraries   @langchain/langgraph ${await versionOf('@langchain/langgraph')}, checkpoint-postgres ${await versionOf('@langchain/langgraph-checkpoint-postgres')}, sqlite: node:sqlite`,
    `sqlite      ${sqliteVersion} (files under the OS temp dir, WAL)`,
    `postgresql  ${postgres.problem === undefined ? `${postgres.version} at ${redact(postgresUrl)}` : `UNREACHABLE at ${redact(postgresUrl)} (${postgres.problem}): PostgreSQL rows skipped`}`,
  ];
  return lines.join('\n');
}

function formatGroup(group: string, rows: BenchRow[], elapsedMs: number): string {
  const parts = [`\n## ${group} (${(elapsedMs / 1000).toFixed(1)} s)`];
  const pivotable = rows.filter((row) => row.dims?.table !== undefined && row.dims.line !== undefined && row.dims.column !== undefined);
  const tables = [...new Set(pivotable.map((row) => String(row.dims!.table)))];
  for (const title of tables) parts.push(`\n${title}\n${pivot(pivotable.filter((row) => row.dims!.table === title))}`);
  const rest = rows.filter((row) => !pivotable.includes(row));
  if (rest.length > 0) parts.push(`${tables.length > 0 ? '\n' : ''}${table(rest)}`);
  return parts.join('\n');
}

function table(rows: BenchRow[]): string {
  const cells = rows.map((row) => [row.name, formatValue(row.value), row.unit, row.note ?? '']);
  return layout([['measure', 'value', 'unit', 'note'], ...cells], [false, true, false, false]);
}

/** Rows side by side: one line per `dims.line`, one column per `dims.column`. */
function pivot(rows: BenchRow[]): string {
  const lines: string[] = [];
  const columns: string[] = [];
  const values = new Map<string, string>();
  for (const row of rows) {
    const line = String(row.dims!.line);
    const column = String(row.dims!.column);
    if (!lines.includes(line)) lines.push(line);
    if (!columns.includes(column)) columns.push(column);
    values.set(`${line}|${column}`, formatValue(row.value));
  }
  const body = lines.map((line) => [line, ...columns.map((column) => values.get(`${line}|${column}`) ?? '–')]);
  return layout([['', ...columns], ...body], [false, ...columns.map(() => true)]);
}

function layout(cells: string[][], rightAlign: boolean[]): string {
  const widths = cells[0]!.map((_, column) => Math.max(...cells.map((row) => (row[column] ?? '').length)));
  const render = (row: string[]) =>
    row
      .map((cell, column) => (rightAlign[column] ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!)))
      .join('  ')
      .trimEnd();
  return [render(cells[0]!), widths.map((width) => '-'.repeat(width)).join('  '), ...cells.slice(1).map(render)].join('\n');
}

function formatValue(value: number): string {
  if (Number.isNaN(value)) return '–';
  if (Math.abs(value) >= 1000) return Math.round(value).toLocaleString('en-US');
  return String(value);
}

function elapsed(startMs: number): string {
  return `${((performance.now() - startMs) / 1000).toFixed(1)} s`;
}

function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(unparsable URL)';
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof Error ? (error.stack ?? error.message) : error);
    process.exit(1);
  },
);
