/**
 * The 10-message turn, vigil beside the plain LangGraph saver, in alternating rounds, so a
 * change to vigil's per-turn work can be judged in a minute: each round seeds both on a
 * fresh 10-message thread and runs the benchmark's warm-up and measured turns (5 + 25),
 * each variant in a block of its own as in `npm run bench`.
 *
 *   npx tsx bench/ten-messages.ts [sqlite|postgres] [rounds=6]
 *
 * Diagnostic only; not part of `npm run bench` (which measures the same thing once).
 */
import type { BackendName } from './backends.js';
import { langGraphHarness, vigilHarness, type TurnHarness } from './turn.bench.js';
import { diagnosticOptions, round, stats } from './util.js';

async function block(harness: TurnHarness, samples: number[]): Promise<void> {
  await harness.seed(10);
  for (let index = 0; index < 5; index++) await harness.turn(index);
  for (let index = 5; index < 30; index++) {
    const start = performance.now();
    await harness.turn(index);
    samples.push(performance.now() - start);
  }
}

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
    const ratios: number[] = [];
    for (let roundIndex = 0; roundIndex < rounds; roundIndex++) {
      const ours: number[] = [];
      const theirs: number[] = [];
      await block(vigil, ours);
      await block(langgraph, theirs);
      const ratio = stats(ours).p50 / stats(theirs).p50;
      ratios.push(ratio);
      console.log(`${backend} round ${roundIndex + 1}: vigil ${round(stats(ours).p50, 2)} ms, langgraph ${round(stats(theirs).p50, 2)} ms, vigil ÷ langgraph ${round(ratio, 2)}`);
    }
    console.log(`${backend}: median vigil ÷ langgraph over ${rounds} rounds: ${round(stats(ratios).p50, 2)}`);
  } finally {
    await cleanup();
  }
}

await main();
