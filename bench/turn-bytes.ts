/**
 * Where a turn's bytes go: the growth of each table (with its indexes) per vigil turn,
 * beside the raw JSON of the turn's new messages (the yardstick of issue 10's bytes target).
 *
 *   npx tsx bench/turn-bytes.ts [sqlite|postgres] [size=100] [turns=200]
 *
 * Diagnostic only; not part of `npm run bench`. Many turns, because SQLite grows by whole
 * pages and PostgreSQL by whole 8 KiB blocks. On PostgreSQL the tables are vacuumed every 20
 * turns, as autovacuum would (`novacuum` as a fourth argument: never), so old versions of
 * updated rows (a run's record, the thread's counters) count only until their space is reused.
 */
import type { BackendName } from './backends.js';
import { vigilHarness } from './turn.bench.js';
import { diagnosticOptions } from './util.js';

async function main(): Promise<void> {
  const backend = (process.argv[2] ?? 'sqlite') as BackendName;
  const size = Number(process.argv[3] ?? 100);
  const turns = Number(process.argv[4] ?? 200);
  const vacuumEvery = process.argv[5] === 'novacuum' ? 0 : 20;
  const { options, cleanup } = diagnosticOptions();
  try {
    const harness = await vigilHarness(options, backend);
    await harness.seed(size);
    for (let index = 0; index < 3; index++) await harness.turn(index);
    const vacuum = async () => {
      if (vacuumEvery > 0) await harness.vacuum?.();
    };
    await vacuum();
    const before = await harness.tableBytes!();
    const totalBefore = await harness.bytes();
    for (let index = 0; index < turns; index++) {
      await harness.turn(3 + index);
      if (vacuumEvery > 0 && (index + 1) % vacuumEvery === 0) await vacuum();
    }
    await vacuum();
    const after = await harness.tableBytes!();
    const totalAfter = await harness.bytes();
    const newJson = await harness.lastMessagesJson(2);
    console.log(`vigil on ${backend}, ${size} messages, ${turns} turns: ${((totalAfter - totalBefore) / turns).toFixed(0)} B per turn in all; new JSON ${newJson} B`);
    console.log('  B/turn  table');
    const names = new Set([...before.keys(), ...after.keys()]);
    const growth = [...names].map((name) => [name, ((after.get(name) ?? 0) - (before.get(name) ?? 0)) / turns] as const);
    for (const [name, bytes] of growth.sort((a, b) => b[1] - a[1])) if (bytes !== 0) console.log(`${bytes.toFixed(0).padStart(8)}  ${name}`);
  } finally {
    await cleanup();
  }
}

await main();
