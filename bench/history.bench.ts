/**
 * Group "history": reading a long thread's history and a user's thread list, on
 * SQLite and PostgreSQL: the paths a person's client hits on every page load.
 */
import { randomUUID } from 'node:crypto';
import type { BaseMessage } from '@langchain/core/messages';
import { Annotation, END, START, StateGraph, messagesStateReducer } from '@langchain/langgraph';
import type { Storage } from '../src/app/ports.js';
import { backendsOf, openBenchStorage, type BackendName } from './backends.js';
import { mixedMessages } from './fixtures.js';
import type { BenchOptions, BenchRow } from './types.js';
import { round, sample, stats } from './util.js';

const GROUP = 'history';
const USER = 'bench-user';
const OTHER_USER = 'bench-other-user';

export async function benchHistory(options: BenchOptions): Promise<BenchRow[]> {
  const messageCount = options.quick ? 2_000 : 10_000;
  const threadsPerUser = options.quick ? 200 : 1_000;
  const repetitions = options.quick ? 30 : 200;
  const rows: BenchRow[] = [];
  for (const backend of backendsOf(options)) {
    options.progress(`history: ${backend}`);
    rows.push(...(await benchBackend(options, backend, { messageCount, threadsPerUser, repetitions })));
  }
  return rows;
}

async function benchBackend(
  options: BenchOptions,
  backend: BackendName,
  sizes: { messageCount: number; threadsPerUser: number; repetitions: number },
): Promise<BenchRow[]> {
  const { storage, analyze } = await openBenchStorage(options, backend, 'history');
  const rows: BenchRow[] = [];
  const base = Date.parse('2025-01-01T00:00:00.000Z');
  const at = (offsetMs: number) => new Date(base + offsetMs).toISOString();
  await storage.agents.create({ id: 'bench', userId: USER, name: 'bench', kind: 'chat', systemPrompt: 'You are a benchmark.', model: 'demo', settings: {} }, at(0));

  // One long thread, filled in batches as a busy thread's runs would: a graph whose input
  // is the batch, on the storage's saver, which writes history with each checkpoint.
  const threadId = randomUUID();
  await storage.threads.create({ id: threadId, userId: USER, agentId: 'bench', title: 'long thread' }, at(0));
  const { messages } = mixedMessages(sizes.messageCount, 11);
  const State = Annotation.Root({ messages: Annotation<BaseMessage[]>({ reducer: messagesStateReducer, default: () => [] }) });
  const graph = new StateGraph(State).addNode('keep', () => ({})).addEdge(START, 'keep').addEdge('keep', END).compile({ checkpointer: storage.checkpointer });
  const batch = 500;
  const fillStart = performance.now();
  for (let start = 0; start < messages.length; start += batch) {
    await graph.invoke({ messages: messages.slice(start, start + batch) }, { configurable: { thread_id: threadId } });
  }
  const fillMs = performance.now() - fillStart;
  const thread = await storage.threads.get(USER, threadId);
  if (thread?.messageCount !== sizes.messageCount) throw new Error(`history holds ${thread?.messageCount} messages, expected ${sizes.messageCount}`);
  rows.push({
    group: GROUP,
    name: `${backend}: fill ${sizes.messageCount} msgs (a graph's input × ${batch})`,
    value: Math.round(sizes.messageCount / (fillMs / 1000)),
    unit: 'msgs/s',
    note: `${round(fillMs, 0)} ms total; ${thread.visibleCount} visible`,
  });

  const timed = async (name: string, work: () => Promise<unknown>, note?: string) => {
    const result = stats(await sample(work, sizes.repetitions, Math.min(20, sizes.repetitions)));
    const dims = { backend, query: name };
    rows.push({ group: GROUP, name: `${backend}: ${name} p50`, value: round(result.p50), unit: 'ms', dims, ...(note ? { note } : {}) });
    rows.push({ group: GROUP, name: `${backend}: ${name} p99`, value: round(result.p99), unit: 'ms', dims });
  };

  if (backend === 'postgres') {
    // Right after a bulk fill the planner has no statistics yet: worth seeing once.
    await timed('history first page (all, 50), fresh table', () => storage.threads.history(USER, threadId, { visibility: 'all', limit: 50 }), 'before ANALYZE: no planner statistics yet');
    await analyze();
  }
  await timed('history first page (user, 50)', () => storage.threads.history(USER, threadId, { visibility: 'user', limit: 50 }));
  await timed('history first page (all, 50)', () => storage.threads.history(USER, threadId, { visibility: 'all', limit: 50 }));
  const middle = await cursorToMiddle(storage, threadId, thread.visibleCount);
  await timed(
    'history deep page (user, 50, middle)',
    () => storage.threads.history(USER, threadId, { visibility: 'user', limit: 50, cursor: middle.cursor }),
    `cursor after ${middle.pages} pages`,
  );

  // The thread list: this user's threads among another user's as many.
  for (let index = 0; index < sizes.threadsPerUser; index++) {
    await storage.threads.create({ id: randomUUID(), userId: USER, agentId: 'bench', title: `thread ${index}` }, at(2 * index + 1));
    await storage.threads.create({ id: randomUUID(), userId: OTHER_USER, agentId: 'bench', title: `thread ${index}` }, at(2 * index + 2));
  }
  await analyze();
  await timed(`threads.list first page (20 of ${sizes.threadsPerUser + 1})`, () => storage.threads.list(USER, { limit: 20 }), `+${sizes.threadsPerUser} threads of another user`);
  return rows;
}

/** Walk older pages until about half the visible messages are behind; the cursor there. */
async function cursorToMiddle(storage: Storage, threadId: string, visibleCount: number): Promise<{ cursor: string; pages: number }> {
  let cursor: string | undefined;
  let pages = 0;
  let seen = 0;
  while (seen < visibleCount / 2) {
    const page = await storage.threads.history(USER, threadId, { visibility: 'user', limit: 50, cursor });
    pages++;
    seen += page.messages.length;
    if (page.nextCursor === null) break;
    cursor = page.nextCursor;
  }
  if (cursor === undefined) throw new Error('the thread has a single page');
  return { cursor, pages };
}
