/**
 * Which storage calls a turn makes, and their wall time, vigil beside the plain LangGraph
 * saver. Wall time of async calls overlaps (LangGraph saves a checkpoint while the next
 * step runs), so read the counts first and the milliseconds as a rough guide.
 *
 *   npx tsx bench/turn-breakdown.ts [sqlite|postgres] [size=10] [turns=40]
 *
 * Diagnostic only (wraps prototype methods in this process); not part of `npm run bench`.
 */
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import { NodeSqliteSaver } from '../src/adapters/sql/checkpoint-sqlite-base.js';
import { DemoChatModel } from '../src/adapters/llm/demo-chat-model.js';
import { SqlMemoryStore } from '../src/adapters/sql/memory-store.js';
import { SqlRunRepository } from '../src/adapters/sql/run-repository.js';
import { SqlThreadRepository } from '../src/adapters/sql/thread-repository.js';
import { ThreadSaver } from '../src/adapters/sql/thread-saver.js';
import { SqliteCheckpointStore } from '../src/adapters/sql/checkpoint-store-sqlite.js';
import { PostgresCheckpointStore } from '../src/adapters/sql/checkpoint-store-postgres.js';
import type { BackendName } from './backends.js';
import { langGraphHarness, vigilHarness, type TurnHarness } from './turn.bench.js';
import { diagnosticOptions } from './util.js';

const wall = new Map<string, { ms: number; calls: number }>();

function record(key: string, startMs: number): void {
  const entry = wall.get(key) ?? { ms: 0, calls: 0 };
  entry.ms += performance.now() - startMs;
  entry.calls++;
  wall.set(key, entry);
}

function wrap(prototype: object, label: string, methods: readonly string[]): void {
  const target = prototype as Record<string, unknown>;
  for (const method of methods) {
    const original = target[method];
    if (typeof original !== 'function') continue;
    target[method] = function (this: unknown, ...args: unknown[]): unknown {
      const start = performance.now();
      const result: unknown = original.apply(this, args);
      if (result instanceof Promise) return result.finally(() => record(`${label}.${method}`, start));
      record(`${label}.${method}`, start);
      return result;
    };
  }
}

async function main(): Promise<void> {
  const backend = (process.argv[2] ?? 'sqlite') as BackendName;
  const size = Number(process.argv[3] ?? 10);
  const turns = Number(process.argv[4] ?? 40);
  wrap(SqlThreadRepository.prototype, 'threads', ['get']);
  wrap(ThreadSaver.prototype, 'vigil saver', ['put', 'putWrites', 'getTuple', 'unappliedMessages']);
  wrap(SqliteCheckpointStore.prototype, 'sqlite store', ['read', 'commit', 'maxSeq', 'key', 'unapplied']);
  wrap(PostgresCheckpointStore.prototype, 'postgres store', ['read', 'commit', 'maxSeq', 'key', 'unapplied']);
  wrap(SqlRunRepository.prototype, 'runs', ['create', 'finish']);
  wrap(SqlMemoryStore.prototype, 'memories', ['search']);
  wrap(NodeSqliteSaver.prototype, 'saver', ['put', 'putWrites', 'getTuple']);
  wrap(PostgresSaver.prototype, 'saver', ['put', 'putWrites', 'getTuple']);
  wrap(DemoChatModel.prototype, 'model', ['invoke']);
  const { options, cleanup } = diagnosticOptions();
  try {
    const makers: [string, () => Promise<TurnHarness>][] = [
      ['vigil', () => vigilHarness(options, backend)],
      ['langgraph', () => langGraphHarness(options, backend, 'langgraph')],
    ];
    for (const [name, make] of makers) {
      const harness = await make();
      await harness.seed(size);
      for (let index = 0; index < 5; index++) await harness.turn(index);
      wall.clear();
      const start = performance.now();
      for (let index = 0; index < turns; index++) await harness.turn(5 + index);
      console.log(`\n${name} on ${backend}, ${size} messages: ${((performance.now() - start) / turns).toFixed(1)} ms per turn`);
      console.log('  ms/turn  calls/turn  call');
      for (const [key, entry] of [...wall].sort((a, b) => b[1].ms - a[1].ms)) {
        console.log(`${(entry.ms / turns).toFixed(2).padStart(9)}  ${(entry.calls / turns).toFixed(1).padStart(10)}  ${key}`);
      }
    }
  } finally {
    await cleanup();
  }
}

await main();
