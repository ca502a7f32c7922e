/**
 * The 10-message turn, vigil beside the plain LangGraph saver, in alternating rounds, so a
 * change to vigil's per-turn work can be judged in a minute: each round seeds both on a
 * fresh 10-message thread and runs 5 warm-up and 25 measured turns, each variant in a
 * block of its own, as the benchmark's alternating target does. Each round also prints the
 * CPU time a measured turn took on each side (on SQLite, in this process, a figure the
 * machine's other load moves less than the wall-clock p50).
 *
 *   npx tsx bench/ten-messages.ts [sqlite|postgres] [rounds=6]
 *
 * Diagnostic only; `npm run bench` measures the same thing in its targets table.
 */
import type { BackendName } from './backends.js';
import { alternatingRatio, langGraphHarness, vigilHarness } from './turn.bench.js';
import { diagnosticOptions, round, stats } from './util.js';

async function main(): Promise<void> {
  const backend = (process.argv[2] ?? 'sqlite') as BackendName;
  const rounds = Number(process.argv[3] ?? 6);
  const { options, cleanup } = diagnosticOptions();
  try {
    const vigil = await vigilHarness(options, backend);
    const langgraph = await langGraphHarness(options, backend, 'langgraph');
    // Both compiled before anything is measured, as the benchmark does.
    for (const harness of [vigil, langgraph]) {
      await harness.seed(10);
      for (let index = 0; index < 60; index++) await harness.turn(index);
    }
    let roundIndex = 0;
    const cpuRatios: number[] = [];
    const median = await alternatingRatio({ harness: vigil, size: 10, reseed: true }, { harness: langgraph, size: 10, reseed: true }, rounds, (ours, theirs, cpu) => {
      cpuRatios.push(cpu.a / cpu.b);
      console.log(
        `${backend} round ${++roundIndex}: p50 vigil ${round(ours, 2)} ms, langgraph ${round(theirs, 2)} ms, vigil ÷ langgraph ${round(ours / theirs, 2)}; ` +
          `CPU a turn vigil ${round(cpu.a, 2)} ms, langgraph ${round(cpu.b, 2)} ms, ÷ ${round(cpu.a / cpu.b, 2)}`,
      );
    });
    console.log(`${backend}: median vigil ÷ langgraph over ${rounds} rounds: p50 ${round(median, 2)}, CPU time ${round(stats(cpuRatios).p50, 2)}${backend === 'postgres' ? ' (this process only: not the server\'s)' : ''}`);
  } finally {
    await cleanup();
  }
}

await main();
