/**
 * Group "memory": a turn's memory recall (the full-text search the chat graph runs before
 * its first model call, on every turn), for an agent with no memories and for one with a
 * few, beside none and beside many memories of another user on the same database. Most
 * agents have no memories: their recall should not cost what other users' memories cost.
 */
import { randomUUID } from 'node:crypto';
import type { Storage } from '../src/app/ports.js';
import { backendsOf, openBenchStorage, type BackendName } from './backends.js';
import type { BenchOptions, BenchRow } from './types.js';
import { round, sample, stats } from './util.js';

const GROUP = 'memory';
const TABLE = 'memory recall p50 (ms): one search as a turn runs it, by the memories of another user on the same database';
const OWNER = { userId: 'bench-owner', agentId: 'bench-remembers' };
const EMPTY = { userId: 'bench-owner', agentId: 'bench-forgets' };
const OTHER = { userId: 'bench-other-user', agentId: 'bench-other' };
const WORDS = ['coffee', 'meeting', 'tomorrow', 'trip', 'weather', 'invoice', 'birthday', 'deadline', 'garden', 'train'];
/** A person's message as a turn's recall receives it: several words the memories hold. */
const QUERY = 'Can we move the coffee meeting tomorrow, or is the train trip still on before the deadline?';

export async function benchMemoryRecall(options: BenchOptions): Promise<BenchRow[]> {
  const others = options.quick ? 500 : 5_000;
  const repetitions = options.quick ? 30 : 200;
  const rows: BenchRow[] = [];
  for (const backend of backendsOf(options)) {
    options.progress(`memory: ${backend}`);
    rows.push(...(await benchBackend(options, backend, others, repetitions)));
  }
  return rows;
}

async function benchBackend(options: BenchOptions, backend: BackendName, others: number, repetitions: number): Promise<BenchRow[]> {
  const { storage, analyze } = await openBenchStorage(options, backend, 'memory');
  const now = new Date().toISOString();
  for (const namespace of [OWNER, EMPTY, OTHER]) {
    await storage.agents.create({ id: namespace.agentId, userId: namespace.userId, name: namespace.agentId, kind: 'chat', systemPrompt: '', model: 'demo', settings: {} }, now);
  }
  await addMemories(storage, OWNER, 20, now);
  const rows: BenchRow[] = [];
  const measure = async (besides: string) => {
    await analyze();
    for (const [column, namespace] of [['agent with no memories', EMPTY], ['agent with 20 memories', OWNER]] as const) {
      const result = stats(await sample(() => storage.memories.search(namespace, QUERY, { limit: 5 }), repetitions, 20));
      rows.push({ group: GROUP, name: `${backend}: ${column}, ${besides} p50`, value: round(result.p50), unit: 'ms', dims: { table: TABLE, line: `${backend}, ${besides}`, column } });
    }
  };
  await measure('no other memories');
  await addMemories(storage, OTHER, others, now);
  await measure(`${others.toLocaleString('en-US')} other memories`);
  return rows;
}

async function addMemories(storage: Storage, namespace: { userId: string; agentId: string }, count: number, now: string): Promise<void> {
  for (let index = 0; index < count; index++) {
    const content = `${WORDS[index % WORDS.length]} with ${WORDS[(index * 3 + 1) % WORDS.length]}, note ${index}`;
    await storage.memories.add(namespace, { id: randomUUID(), content, origin: { by: 'api' } }, now);
  }
}
