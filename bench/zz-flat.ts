import { vigilHarness } from './turn.bench.js';
import { diagnosticOptions, stats } from './util.js';
const { options, cleanup } = diagnosticOptions();
const harness = await vigilHarness(options, (process.argv[2] ?? 'sqlite') as 'sqlite');
await harness.seed(10); for (let i = 0; i < 60; i++) await harness.turn(i);
for (let round = 0; round < 2; round++) for (const size of [100, 10000]) {
  await harness.seed(size);
  for (let i = 0; i < 5; i++) await harness.turn(i);
  const samples: number[] = [];
  for (let i = 5; i < 30; i++) { const t = performance.now(); await harness.turn(i); samples.push(performance.now() - t); }
  console.log(size, stats(samples).p50.toFixed(2));
}
await cleanup();
