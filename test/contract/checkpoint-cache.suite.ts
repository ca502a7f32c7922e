/**
 * The checkpoint cache's contract, run against both backends as openStorage builds them
 * (checkpoint-cache-sqlite.test.ts, checkpoint-cache-postgres.test.ts). The reference for
 * every read is LangGraph's own saver on the same database: a read through the cache
 * must return exactly what it returns, whoever wrote the checkpoint.
 */
import { isDeepStrictEqual } from 'node:util';
import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { Annotation, END, START, StateGraph, messagesStateReducer } from '@langchain/langgraph';
import type { BaseCheckpointSaver, CheckpointTuple } from '@langchain/langgraph-checkpoint';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { readFromStorage, type CheckpointCacheLimits, type CheckpointCacheStats } from '../../src/adapters/sql/checkpoint-cache.js';
import type { Storage } from '../../src/app/ports.js';

export interface CacheBackend {
  /** A server's storage on the shared database; each call is another server. */
  open(cache?: Partial<CheckpointCacheLimits>): Promise<Storage>;
  /** LangGraph's own saver, unmodified, on the same database. */
  reference(): Promise<BaseCheckpointSaver>;
  /** Closes everything opened; called once after the suite. */
  close(): Promise<void>;
}

const TestState = Annotation.Root({
  messages: Annotation<BaseMessage[]>({ reducer: messagesStateReducer, default: () => [] }),
  notes: Annotation<Record<string, unknown>>({ reducer: (_previous, next) => next, default: () => ({}) }),
});

/** Two steps after the input, like the chat graph (recall → respond): four checkpoints a turn. */
function buildGraph(checkpointer: BaseCheckpointSaver) {
  return new StateGraph(TestState)
    .addNode('recall', (state) => ({ notes: { seen: state.messages.length, last: state.messages.at(-1)?.id ?? null, tags: ['a', 'b'] } }))
    .addNode('respond', (state) => {
      const at = state.messages.length;
      return {
        messages: [
          new AIMessage({
            id: `ai-${at}`,
            content: `reply ${at} ✓`,
            tool_calls: at % 3 === 0 ? [{ id: `call-${at}`, name: 'lookup', args: { query: `q${at}`, limit: 3 } }] : [],
            usage_metadata: { input_tokens: at, output_tokens: 2, total_tokens: at + 2 },
            response_metadata: { model: 'scripted', finish: 'stop' },
          }),
          ...(at % 3 === 0 ? [new ToolMessage({ id: `tool-${at}`, content: 'found it', tool_call_id: `call-${at}`, artifact: { rows: [1, 2] } })] : []),
        ],
      };
    })
    .addEdge(START, 'recall')
    .addEdge('recall', 'respond')
    .addEdge('respond', END)
    .compile({ checkpointer });
}

/** The input of turn `index`: plain, synthetic with nested metadata, multimodal, system. */
function inputFor(index: number, prefix: string): BaseMessage {
  const id = `${prefix}-in-${index}`;
  switch (index % 4) {
    case 0:
      return new HumanMessage({ id, content: `hello ${index}` });
    case 1:
      return new HumanMessage({ id, content: 'Continue our conversation naturally.', additional_kwargs: syntheticKwargs(index) });
    case 2:
      return new HumanMessage({ id, content: multimodalContent(index), additional_kwargs: { synthetic: true, trigger_type: 'cron', trigger_reason: 'daily', flags: [false, null, 0] } });
    default:
      return new SystemMessage({ id, content: `note ${index}` });
  }
}

function syntheticKwargs(index: number): Record<string, unknown> {
  return {
    synthetic: true,
    trigger_type: 'question_unanswered',
    trigger_reason: `silence ${index}`,
    nested: { list: [1, 'two', { three: true, four: null }], emoji: '✓ ünïcödé 🙂', empty: {}, deep: { a: { b: { c: [index] } } } },
  };
}

function multimodalContent(index: number) {
  return [
    { type: 'text', text: `look ${index}` },
    { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
  ];
}

function cacheStats(storage: Storage): CheckpointCacheStats {
  const saver = storage.checkpointer as BaseCheckpointSaver & { cacheStats?: () => CheckpointCacheStats };
  if (typeof saver.cacheStats !== 'function') throw new Error('the storage checkpointer has no cache');
  return saver.cacheStats();
}

async function runTurns(storage: Storage, threadId: string, from: number, count: number, prefix = threadId): Promise<void> {
  const graph = buildGraph(storage.checkpointer);
  for (let index = from; index < from + count; index++) {
    await graph.invoke({ messages: [inputFor(index, prefix)] }, { configurable: { thread_id: threadId } });
  }
}

function latest(threadId: string) {
  return { configurable: { thread_id: threadId } };
}

/** Exactly equal: same classes, same values, and the same JSON text (key order included). */
function expectSame(actual: unknown, expected: unknown): void {
  expect(actual).toEqual(expected);
  expect(isDeepStrictEqual(actual, expected)).toBe(true);
  expect(JSON.stringify(actual)).toBe(JSON.stringify(expected));
}

async function listAll(saver: BaseCheckpointSaver, threadId: string): Promise<CheckpointTuple[]> {
  const tuples: CheckpointTuple[] = [];
  for await (const tuple of saver.list(latest(threadId))) tuples.push(tuple);
  return tuples;
}

/**
 * A checkpoint's content without what differs between two runs of the same turns: the
 * ids and times of checkpoints, the task ids derived from them, and the thread id.
 */
function content(tuple: CheckpointTuple, threadId: string): unknown {
  const { id: _id, ts: _ts, ...checkpoint } = tuple.checkpoint;
  const writes = (tuple.pendingWrites ?? []).map(([, channel, value]) => [channel, value]);
  return JSON.parse(JSON.stringify({ checkpoint, metadata: tuple.metadata, writes }).replaceAll(threadId, 'THREAD'));
}

function messagesOf(tuple: CheckpointTuple | undefined): BaseMessage[] {
  return (tuple?.checkpoint.channel_values.messages ?? []) as BaseMessage[];
}

export function checkpointCacheSuite(makeBackend: () => Promise<CacheBackend>): void {
  let backend: CacheBackend;
  let server: Storage;
  let reference: BaseCheckpointSaver;

  beforeAll(async () => {
    backend = await makeBackend();
    server = await backend.open();
    reference = await backend.reference();
  });
  afterAll(async () => {
    await backend?.close();
  });

  it('answers a read of the checkpoint it wrote from the cache, equal to LangGraph’s own read', async () => {
    const threadId = 'cache-hit';
    await runTurns(server, threadId, 0, 6);
    const before = cacheStats(server);
    const cached = await server.checkpointer.getTuple(latest(threadId));
    expect(cacheStats(server).hits).toBe(before.hits + 1);
    expectSame(cached, await reference.getTuple(latest(threadId)));
    expect(messagesOf(cached).length).toBeGreaterThan(12);

    // By id, the same; an older checkpoint (never cached) through the normal read.
    const byId = { configurable: { thread_id: threadId, checkpoint_ns: '', checkpoint_id: cached!.checkpoint.id } };
    expectSame(await server.checkpointer.getTuple(byId), await reference.getTuple(byId));
    expect(cacheStats(server).hits).toBe(before.hits + 2);
    const older = { configurable: { thread_id: threadId, checkpoint_ns: '', checkpoint_id: cached!.parentConfig!.configurable!.checkpoint_id as string } };
    expectSame(await server.checkpointer.getTuple(older), await reference.getTuple(older));
    // list() (PostgreSQL: the plain-row query) returns what the reference lists.
    expectSame(await listAll(server.checkpointer, threadId), await listAll(reference, threadId));
  });

  it('hands out copies: mutating a returned tuple or graph state changes no later read', async () => {
    const threadId = 'cache-copies';
    await runTurns(server, threadId, 0, 3);
    const first = (await server.checkpointer.getTuple(latest(threadId)))!;
    messagesOf(first).push(new HumanMessage({ id: 'intruder', content: 'not saved' }));
    messagesOf(first).reverse();
    (first.metadata as Record<string, unknown>).intruder = true;
    (first.checkpoint.channel_values.notes as Record<string, unknown>).seen = -1;
    ((first.checkpoint.channel_values.notes as Record<string, unknown>).tags as string[]).push('c');
    first.checkpoint.channel_versions.intruder = 99;
    first.checkpoint.versions_seen.intruder = { x: 1 };
    const graph = buildGraph(server.checkpointer);
    const snapshot = await graph.getState(latest(threadId));
    (snapshot.values as { messages: BaseMessage[] }).messages.length = 0;

    expectSame(await server.checkpointer.getTuple(latest(threadId)), await reference.getTuple(latest(threadId)));
    // And the next turn starts from the stored state, not the mutated copy.
    await runTurns(server, threadId, 3, 1);
    const after = await server.checkpointer.getTuple(latest(threadId));
    expectSame(after, await reference.getTuple(latest(threadId)));
    expect(messagesOf(after).some((message) => message.id === 'intruder')).toBe(false);
  });

  it('returns the pending writes stored now, even when the checkpoint is cached', async () => {
    const threadId = 'cache-writes';
    await runTurns(server, threadId, 0, 2);
    const tuple = (await server.checkpointer.getTuple(latest(threadId)))!;
    expect(tuple.pendingWrites).toEqual([]);
    // Another server records writes against the cached checkpoint.
    const other = await backend.open();
    await other.checkpointer.putWrites(tuple.config, [['notes', { from: 'elsewhere' }], ['messages', [new HumanMessage({ id: 'w1', content: 'pending' })]]], 'task-1');
    const hits = cacheStats(server).hits;
    const cached = await server.checkpointer.getTuple(latest(threadId));
    expect(cacheStats(server).hits).toBe(hits + 1);
    expect(cached?.pendingWrites?.map(([task, channel]) => [task, channel])).toEqual([
      ['task-1', 'notes'],
      ['task-1', 'messages'],
    ]);
    expectSame(cached, await reference.getTuple(latest(threadId)));
  });

  it('sees a checkpoint another server wrote (no stale read), and a thread another server deleted', async () => {
    const threadId = 'cache-two-servers';
    const other = await backend.open();
    await runTurns(server, threadId, 0, 3);
    const mine = await server.checkpointer.getTuple(latest(threadId));
    await runTurns(other, threadId, 3, 2);
    const misses = cacheStats(server).misses;
    const seen = await server.checkpointer.getTuple(latest(threadId));
    expect(cacheStats(server).misses).toBe(misses + 1);
    expect(seen?.checkpoint.id).not.toBe(mine?.checkpoint.id);
    expect(messagesOf(seen).length).toBeGreaterThan(messagesOf(mine).length);
    expectSame(seen, await reference.getTuple(latest(threadId)));

    // This server continues from the other's state, and the other sees this one's.
    await runTurns(server, threadId, 5, 1);
    expectSame(await other.checkpointer.getTuple(latest(threadId)), await reference.getTuple(latest(threadId)));
    expectSame(await server.checkpointer.getTuple(latest(threadId)), await reference.getTuple(latest(threadId)));
    const ids = messagesOf(await reference.getTuple(latest(threadId))).map((message) => message.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toContain(`${threadId}-in-4`);
    expect(ids).toContain(`${threadId}-in-5`);

    await other.checkpointer.deleteThread(threadId);
    expect(await server.checkpointer.getTuple(latest(threadId))).toBeUndefined();
    // The same thread id, started again elsewhere: the first server reads the new one.
    await runTurns(other, threadId, 0, 1, 'again');
    const restarted = await server.checkpointer.getTuple(latest(threadId));
    expectSame(restarted, await reference.getTuple(latest(threadId)));
    expect(messagesOf(restarted).map((message) => message.id)).toEqual(['again-in-0', 'ai-1']);
  });

  it('forgets a thread deleted through it', async () => {
    const threadId = 'cache-delete';
    await runTurns(server, threadId, 0, 2);
    expect(await server.checkpointer.getTuple(latest(threadId))).toBeDefined();
    await server.checkpointer.deleteThread(threadId);
    expect(await server.checkpointer.getTuple(latest(threadId))).toBeUndefined();
    expect(await reference.getTuple(latest(threadId))).toBeUndefined();
  });

  it('I3: synthetic metadata and multimodal content survive a cached read and the next save bit for bit', async () => {
    const threadId = 'cache-i3';
    const synthetic = new HumanMessage({ id: 'i3-synthetic', content: 'Continue our conversation naturally.', additional_kwargs: syntheticKwargs(7) });
    const multimodal = new HumanMessage({
      id: 'i3-multimodal',
      content: multimodalContent(7),
      additional_kwargs: { synthetic: true, trigger_type: 'question_unanswered', trigger_reason: 'probe', synthetic_flags: [false, null, 0] },
    });
    const expected = [synthetic, multimodal].map((message) => ({
      id: message.id,
      kwargs: JSON.stringify(message.additional_kwargs),
      content: JSON.stringify(message.content),
    }));
    const graph = buildGraph(server.checkpointer);
    await graph.invoke({ messages: [synthetic, multimodal] }, { configurable: { thread_id: threadId } });

    const check = (tuple: CheckpointTuple | undefined) => {
      for (const original of expected) {
        const restored = messagesOf(tuple).find((message) => message.id === original.id);
        expect(restored).toBeDefined();
        expect(HumanMessage.isInstance(restored)).toBe(true);
        expect(JSON.stringify(restored!.additional_kwargs)).toBe(original.kwargs);
        expect(JSON.stringify(restored!.content)).toBe(original.content);
        expect(restored!.additional_kwargs.synthetic).toBe(true);
      }
    };
    const hits = cacheStats(server).hits;
    const cached = await server.checkpointer.getTuple(latest(threadId));
    expect(cacheStats(server).hits).toBe(hits + 1);
    check(cached);
    check(await reference.getTuple(latest(threadId)));
    expectSame(cached, await reference.getTuple(latest(threadId)));

    // A turn on the cached state saves them again unchanged.
    await runTurns(server, threadId, 0, 2);
    check(await reference.getTuple(latest(threadId)));
    check(await server.checkpointer.getTuple(latest(threadId)));
    // The start-up probe's read goes past the cache, to what is stored.
    const stats = cacheStats(server);
    const stored = await readFromStorage(server.checkpointer, latest(threadId));
    expect(cacheStats(server)).toEqual(stats);
    check(stored);
    expectSame(stored, await reference.getTuple(latest(threadId)));
  });

  it('a run on the cached state saves the same checkpoints as a run without the cache', async () => {
    const uncached = await backend.open({ maxThreads: 0 });
    const withCache = 'same-cached';
    const withoutCache = 'same-uncached';
    for (let index = 0; index < 6; index++) {
      await runTurns(server, withCache, index, 1, 'same');
      await runTurns(uncached, withoutCache, index, 1, 'same');
    }
    expect(cacheStats(uncached).hits).toBe(0);
    const cachedHistory = await listAll(reference, withCache);
    const plainHistory = await listAll(reference, withoutCache);
    expect(cachedHistory.length).toBe(plainHistory.length);
    expect(cachedHistory.map((tuple) => content(tuple, withCache))).toEqual(plainHistory.map((tuple) => content(tuple, withoutCache)));
    expect(JSON.stringify(cachedHistory.map((tuple) => content(tuple, withCache)))).toBe(JSON.stringify(plainHistory.map((tuple) => content(tuple, withoutCache))));
  });

  it('remembers odd values exactly as a read of the stored row returns them', async () => {
    const threadId = 'cache-odd-values';
    const saver = server.checkpointer;
    const odd = () => ({
      list: [new HumanMessage({ id: 'odd-1', content: 'x', additional_kwargs: { when: new Date(0) } }), new Date(0), Number.NaN, undefined, new Uint8Array([1, 2]), { a: undefined, b: -0 }, 'text', 5, null],
      bytes: new Uint8Array([1, 2, 3]),
      when: new Date(86_400_000),
      set: new Set([1, 'two']),
      map: new Map<string, unknown>([['a', { deep: [1] }]]),
      nothing: undefined,
    });
    const first = {
      v: 4,
      id: '1f0f0000-0000-6000-8000-000000000001',
      ts: new Date(0).toISOString(),
      channel_values: odd(),
      channel_versions: { list: 1, bytes: 1, when: 1, set: 1, map: 1, nothing: 1 },
      versions_seen: { node: { list: 1 } },
    };
    const metadata = { source: 'update' as const, step: 1, parents: {}, note: { when: new Date(0), nested: [undefined, 1] } };
    let config = await saver.put({ configurable: { thread_id: threadId, checkpoint_ns: '' } }, first, metadata, first.channel_versions);
    const hits = cacheStats(server).hits;
    expectSame(await saver.getTuple(latest(threadId)), await reference.getTuple(latest(threadId)));
    // Only one channel written: the others come from the blobs (PostgreSQL) the first put stored.
    const second = { ...first, id: '1f0f0000-0000-6000-8000-000000000002', channel_values: { ...odd(), when: new Date(1) }, channel_versions: { ...first.channel_versions, when: 2 } };
    config = await saver.put(config, second, { ...metadata, step: 2 }, { when: 2 });
    expectSame(await saver.getTuple(latest(threadId)), await reference.getTuple(latest(threadId)));
    expectSame(await saver.getTuple(config), await reference.getTuple(config));
    expect(cacheStats(server).hits).toBe(hits + 3);
  });

  it('keeps to its bounds: threads and bytes', async () => {
    const few = await backend.open({ maxThreads: 2 });
    for (const threadId of ['bound-1', 'bound-2', 'bound-3']) await runTurns(few, threadId, 0, 1);
    let stats = cacheStats(few);
    expect(stats.entries).toBeLessThanOrEqual(2);
    expect(stats.evictions).toBeGreaterThan(0);
    // The evicted thread is read from the database, correctly.
    const misses = stats.misses;
    expectSame(await few.checkpointer.getTuple(latest('bound-1')), await reference.getTuple(latest('bound-1')));
    expect(cacheStats(few).misses).toBe(misses + 1);

    // Stored checkpoints no longer carry the message list (the message log holds it), so
    // they are all small: a bound below one stored checkpoint keeps none.
    const small = await backend.open({ maxBytes: 100 });
    await runTurns(small, 'bound-big', 0, 12);
    stats = cacheStats(small);
    expect(stats.entries).toBe(0);
    expect(stats.bytes).toBeLessThanOrEqual(100);
    const bigMisses = stats.misses;
    expectSame(await small.checkpointer.getTuple(latest('bound-big')), await reference.getTuple(latest('bound-big')));
    expect(cacheStats(small).misses).toBe(bigMisses + 1);
  });
}

/** Helps the per-backend files close what they opened, in reverse. */
export class Closers {
  readonly #closers: (() => Promise<void>)[] = [];

  add(close: () => Promise<void>): void {
    this.#closers.push(close);
  }

  async closeAll(): Promise<void> {
    for (const close of this.#closers.reverse()) await close().catch(() => undefined);
  }
}
