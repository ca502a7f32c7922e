/**
 * Where a turn's time goes: CPU-profiles only the measured turns of one variant (not
 * the seeding), then prints self time by area and the hottest functions.
 *
 *   npx tsx bench/profile-turn.ts <vigil|langgraph|delta> <sqlite|postgres> [size=2000] [turns=30] [reseed=0]
 *
 * `reseed`: start a fresh thread of `size` messages every that many turns (unprofiled), so
 * many turns can be sampled at a short thread's length (the 10-message target).
 *
 * The raw profile is written to the OS temp dir (open it in Chrome DevTools). Not part
 * of `npm run bench`.
 */
import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BackendName } from './backends.js';
import { langGraphHarness, vigilHarness, type Variant } from './turn.bench.js';
import { diagnosticOptions, round, stats } from './util.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

async function main(): Promise<void> {
  const [variantArg = 'vigil', backendArg = 'sqlite', sizeArg = '2000', turnsArg = '30', reseedArg = '0'] = process.argv.slice(2);
  const reseed = Number(reseedArg);
  const variant = variantArg as Variant;
  const backend = backendArg as BackendName;
  const size = Number(sizeArg);
  const turns = Number(turnsArg);
  const { options, cleanup } = diagnosticOptions((message) => console.error(message));
  try {
    const harness = variant === 'vigil' ? await vigilHarness(options, backend) : await langGraphHarness(options, backend, variant);
    await harness.seed(size);
    for (let index = 0; index < 3; index++) await harness.turn(index);
    const session = new Session();
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 200 });
    await session.post('Profiler.start');
    const samples: number[] = [];
    const profiles: Profile[] = [];
    for (let index = 0; index < turns; index++) {
      if (reseed > 0 && index > 0 && index % reseed === 0) {
        profiles.push(((await session.post('Profiler.stop')) as { profile: Profile }).profile);
        await harness.seed(size);
        for (let warm = 0; warm < 3; warm++) await harness.turn(warm);
        await session.post('Profiler.start');
      }
      const start = performance.now();
      await harness.turn(3 + index);
      samples.push(performance.now() - start);
    }
    profiles.push(((await session.post('Profiler.stop')) as { profile: Profile }).profile);
    const profile = profiles.at(-1)!;
    session.disconnect();
    // The last profile only (one file a turn range); the summary covers them all.
    const file = join(tmpdir(), `vigil-turn-${variant}-${backend}-${size}.cpuprofile`);
    await writeFile(file, JSON.stringify(profile));
    const result = stats(samples);
    console.log(`${variant} on ${backend}, ${size} messages, ${turns} turns: p50 ${round(result.p50, 1)} ms, mean ${round(result.mean, 1)} ms; profile ${file}`);
    summarise(profiles, turns);
  } finally {
    await cleanup();
  }
}

/** Self time per area and per function, in ms per turn. */
function summarise(profiles: readonly Profile[], turns: number): void {
  const byArea = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let total = 0;
  for (const profile of profiles) {
  const selfMs = new Map<number, number>();
  for (let index = 0; index < profile.samples.length; index++) {
    const id = profile.samples[index]!;
    selfMs.set(id, (selfMs.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0) / 1000);
  }
  for (const node of profile.nodes) {
    const ms = selfMs.get(node.id) ?? 0;
    if (ms === 0) continue;
    total += ms;
    const area = areaOf(node.callFrame.url, node.callFrame.functionName);
    byArea.set(area, (byArea.get(area) ?? 0) + ms);
    const name = `${node.callFrame.functionName || '(anonymous)'} ${shortUrl(node.callFrame.url)}:${node.callFrame.lineNumber + 1}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + ms);
  }
  }
  const print = (title: string, entries: Map<string, number>, limit: number) => {
    console.log(`\n${title} (ms per turn, % of sampled time)`);
    for (const [name, ms] of [...entries].sort((a, b) => b[1] - a[1]).slice(0, limit)) {
      console.log(`${(ms / turns).toFixed(2).padStart(8)}  ${((100 * ms) / total).toFixed(1).padStart(5)}%  ${name}`);
    }
  };
  console.log(`sampled ${round(total / turns, 1)} ms per turn (idle = waiting for I/O)`);
  print('self time by area', byArea, 20);
  print('hottest functions (self time)', byFunction, 30);
}

function areaOf(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : `(native) ${functionName}`;
  const match = /node_modules\/((?:@[^/]+\/)?[^/]+)\/(.*)$/.exec(url);
  if (match) {
    const [, pkg, rest] = match;
    if (pkg === '@langchain/langgraph' || pkg === '@langchain/core' || pkg?.startsWith('@langchain/langgraph-checkpoint')) {
      return `${pkg}/${rest!.replace(/^dist\//, '').split('/').slice(0, 2).join('/')}`;
    }
    return pkg!;
  }
  if (url.includes('/src/')) return `vigil ${url.slice(url.indexOf('/src/') + 1)}`;
  if (url.startsWith('node:')) return url;
  return shortUrl(url);
}

function shortUrl(url: string): string {
  return url.replace(/^file:\/\//, '').replace(/.*node_modules\//, '').replace(`${process.cwd()}/`, '');
}

await main();
