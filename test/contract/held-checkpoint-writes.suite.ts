/**
 * Holding superseded writes (src/adapters/sql/held-checkpoint-writes.ts) in vigil's saver,
 * on both backends as openStorage builds them (held-checkpoint-writes-sqlite.test.ts,
 * held-checkpoint-writes-postgres.test.ts), driven as RunExecution drives a run: streamed
 * with durability 'sync', HOLD_SUPERSEDED_WRITES (and HOLD_INPUT_STEP when the input is a
 * person's message) and a HISTORY_SINK in the configurable, and the thread settled when the
 * attempt ends. A chat turn then stores one checkpoint and no writes of its finished tasks,
 * the stored chain has no gap, each stored checkpoint is the one MemorySaver holds for the
 * same step, the person's message is durable (history) as soon as its step's put returns, and
 * whatever nothing supersedes (an interrupt, a run cut short) is stored as before.
 */
import { randomUUID } from 'node:crypto';
import { AIMessage, HumanMessage, RemoveMessage, type BaseMessage } from '@langchain/core/messages';
import type { RunnableConfig } from '@langchain/core/runnables';
import { Annotation, Command, END, MemorySaver, START, StateGraph, interrupt, messagesStateReducer } from '@langchain/langgraph';
import { emptyCheckpoint, type BaseCheckpointSaver, type CheckpointTuple } from '@langchain/langgraph-checkpoint';
import { beforeAll, expect, it } from 'vitest';
import type { SqlStorage } from '../../src/adapters/sql/sql-storage.js';
import { HISTORY_SINK, HOLD_INPUT_STEP, HOLD_SUPERSEDED_WRITES, type HistorySink, type StoredMessage } from '../../src/app/ports.js';
import { countRows, gaps, latest, listTuples, messagesOf, openedBackend, storedValues, storedWrites, type StoreBackend } from '../helpers/thread-store.js';

const State = Annotation.Root({
  messages: Annotation<BaseMessage[]>({ reducer: messagesStateReducer, default: () => [] }),
  notes: Annotation<string[]>({ reducer: (previous, next) => [...previous, ...next], default: () => [] }),
});

/** START → respond → (tools → respond)* → END: one node per step, as vigil's chat graph. `gate`: respond waits for it (a model call in flight). */
function buildGraph(checkpointer: BaseCheckpointSaver, gate?: () => Promise<void>) {
  return new StateGraph(State)
    .addNode('respond', async (state) => {
      await gate?.();
      const asks = state.messages.at(-1)?.content === 'use the tool';
      return { messages: [new AIMessage({ id: `ai-${state.messages.length}`, content: asks ? 'calling the tool' : `reply to ${state.messages.length} messages` })], notes: ['respond'] };
    })
    .addNode('tools', () => {
      const answer = interrupt({ question: 'may I?' }) as string;
      return { messages: [new HumanMessage({ id: `tool-${answer}`, content: `the tool ran: ${answer}` })], notes: ['tools'] };
    })
    .addEdge(START, 'respond')
    .addConditionalEdges('respond', (state) => (state.messages.at(-1)?.content === 'calling the tool' ? 'tools' : END), ['tools', END])
    .addEdge('tools', 'respond')
    .compile({ checkpointer });
}

type Graph = ReturnType<typeof buildGraph>;

/**
 * What a run asks of the saver: 'input-step' as RunExecution's run whose input is a message
 * (HOLD_SUPERSEDED_WRITES and HOLD_INPUT_STEP), 'superseded' as one without (a resume:
 * HOLD_SUPERSEDED_WRITES only), 'nothing' as any other caller.
 */
type Asking = 'input-step' | 'superseded' | 'nothing';

/** A run's history sink: what the saver told it, in order. */
function recordingSink(runId: string): HistorySink & { told: StoredMessage[] } {
  const told: StoredMessage[] = [];
  return { runId, now: () => new Date().toISOString(), onStored: (messages) => told.push(...messages), told };
}

function configOf(threadId: string, asking: Asking, sink?: HistorySink): RunnableConfig {
  return {
    configurable: {
      thread_id: threadId,
      ...(asking !== 'nothing' ? { [HOLD_SUPERSEDED_WRITES]: true } : {}),
      ...(asking === 'input-step' ? { [HOLD_INPUT_STEP]: true } : {}),
      ...(sink !== undefined ? { [HISTORY_SINK]: sink } : {}),
    },
  };
}

/** One attempt as the run coordinator drives it: streamed with durability 'sync', then the thread settled. */
async function attempt(graph: Graph, storage: SqlStorage | undefined, input: unknown, config: RunnableConfig): Promise<void> {
  await stream(graph, input, config);
  await storage?.checkpointer.settle(String(config.configurable?.thread_id));
}

async function stream(graph: Graph, input: unknown, config: RunnableConfig): Promise<void> {
  const values = await graph.stream(input as never, { ...config, streamMode: 'values', durability: 'sync' });
  for await (const chunk of values) void chunk;
}

function say(index: number, content = `message ${index}`) {
  return { messages: [new HumanMessage({ id: `human-${index}`, content })] };
}

function plain(values: unknown): unknown {
  const { messages, notes } = values as { messages: BaseMessage[]; notes: string[] };
  return { messages: messages.map((message) => ({ type: message.type, id: message.id, content: message.content })), notes };
}

/** A checkpoint's state and metadata, as text (without what differs between two runs: ids, times, parents, pending writes). */
function stateOf(tuple: CheckpointTuple): string {
  const { id: _id, ts: _ts, ...checkpoint } = tuple.checkpoint;
  return JSON.stringify({ checkpoint, metadata: tuple.metadata });
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

export function heldCheckpointWritesSuite(makeBackend: () => Promise<StoreBackend>): void {
  const opened = openedBackend(makeBackend);
  let backend: StoreBackend;
  beforeAll(() => {
    backend = opened();
  });

  it('a run that asks stores one checkpoint per chat turn (HOLD_INPUT_STEP) and no writes of its finished tasks; the chain has no gap; each stored checkpoint is MemorySaver\'s for the same step', async () => {
    const server = await backend.open();
    const graph = buildGraph(server.checkpointer);
    const reference = buildGraph(new MemorySaver());
    const threads = { 'input-step': `input-step-${randomUUID()}`, superseded: `superseded-${randomUUID()}`, nothing: `nothing-${randomUUID()}` } as const;
    for (let index = 0; index < 4; index++) {
      for (const asking of ['input-step', 'superseded', 'nothing'] as const) await attempt(graph, server, say(index), configOf(threads[asking], asking));
      await attempt(reference, undefined, say(index), configOf('reference', 'nothing'));
    }
    // Asking nothing: the input checkpoint, after __start__, after respond. Holding superseded
    // writes: the last two. Holding the input step too: the last one.
    expect(await countRows(server, 'thread_checkpoints', threads.nothing)).toBe(12);
    expect(await countRows(server, 'thread_checkpoints', threads.superseded)).toBe(8);
    expect(await countRows(server, 'thread_checkpoints', threads['input-step'])).toBe(4);
    expect(await countRows(server, 'thread_checkpoint_writes', threads.nothing)).toBeGreaterThan(0);
    expect(await countRows(server, 'thread_checkpoint_writes', threads.superseded)).toBe(0);
    expect(await countRows(server, 'thread_checkpoint_writes', threads['input-step'])).toBe(0);
    // Each message once, whatever was held.
    for (const threadId of Object.values(threads)) expect(await countRows(server, 'thread_messages', threadId)).toBe(8);

    const expected = plain((await reference.getState(latest('reference'))).values);
    const referenceStates = new Map<string, string>();
    for (const tuple of await listTuples(reference.checkpointer as BaseCheckpointSaver, 'reference')) referenceStates.set(`${tuple.metadata?.source}:${tuple.metadata?.step}`, stateOf(tuple));
    const other = await backend.open();
    for (const threadId of Object.values(threads)) {
      for (const reader of [server, other]) {
        expect(await gaps(reader.checkpointer, threadId)).toEqual([]);
        expect(plain((await buildGraph(reader.checkpointer).getState(latest(threadId))).values)).toEqual(expected);
        const tuples = await listTuples(reader.checkpointer, threadId);
        for (const tuple of tuples) expect(stateOf(tuple)).toBe(referenceStates.get(`${tuple.metadata?.source}:${tuple.metadata?.step}`));
        if (threadId !== threads.nothing) expect(tuples.every((tuple) => tuple.metadata?.source !== 'input')).toBe(true);
      }
    }
  });

  it('a run that asks tells its HISTORY_SINK of each message once, in order, with its id; history lists them, and nothing is left unapplied', async () => {
    const server = await backend.open();
    const userId = randomUUID();
    const threadId = randomUUID();
    await server.threads.create({ id: threadId, userId, agentId: 'agent', title: null }, new Date().toISOString());
    const graph = buildGraph(server.checkpointer);
    const told: StoredMessage[] = [];
    for (let index = 0; index < 3; index++) {
      const sink = recordingSink(`run-${index}`);
      await attempt(graph, server, say(index), configOf(threadId, 'input-step', sink));
      expect(sink.told.map((message) => [message.id, message.runId])).toEqual([
        [`human-${index}`, `run-${index}`],
        [`ai-${2 * index + 1}`, `run-${index}`],
      ]);
      told.push(...sink.told);
    }
    const ids = messagesOf(await server.checkpointer.getTuple(latest(threadId))).map((message) => message.id);
    expect(told.map((message) => message.id)).toEqual(ids);
    const history = (await (await backend.open()).threads.history(userId, threadId, { visibility: 'all', limit: 100 })).messages;
    expect(history.map((message) => [message.id, message.runId, message.seq])).toEqual(told.map((message) => [message.id, message.runId, message.seq]));
    expect(await server.checkpointer.unappliedMessages(threadId)).toEqual([]);
  });

  it('HOLD_INPUT_STEP: the person\'s message is in history once its step\'s put returns, before any checkpoint holds it; a process ending then leaves it unapplied for the next run; the run\'s checkpoint applies it', async () => {
    const server = await backend.open();
    const userId = randomUUID();
    const threadId = randomUUID();
    await server.threads.create({ id: threadId, userId, agentId: 'agent', title: null }, new Date().toISOString());
    const gate = deferred();
    const entered = deferred();
    let waiting = false;
    const graph = buildGraph(server.checkpointer, async () => {
      if (!waiting) return;
      entered.resolve();
      await gate.promise;
    });
    await attempt(graph, server, say(0), configOf(threadId, 'input-step', recordingSink('run-0')));
    const checkpoints = await countRows(server, 'thread_checkpoints', threadId);
    waiting = true;
    const sink = recordingSink('run-1');
    const run = attempt(graph, server, say(1, 'are you there?'), configOf(threadId, 'input-step', sink));
    await entered.promise;
    // The reply is being made: what a crash now would leave.
    expect(sink.told.map((message) => message.id)).toEqual(['human-1']);
    const other = await backend.open();
    expect((await other.threads.history(userId, threadId, { visibility: 'all', limit: 100 })).messages.map((message) => message.id)).toEqual(['human-0', 'ai-1', 'human-1']);
    expect(await countRows(server, 'thread_checkpoints', threadId)).toBe(checkpoints);
    expect(messagesOf(await other.checkpointer.getTuple(latest(threadId))).map((message) => message.id)).toEqual(['human-0', 'ai-1']);
    const unapplied = await other.checkpointer.unappliedMessages(threadId);
    expect(unapplied.map((message) => [message.id, message.content])).toEqual([['human-1', 'are you there?']]);
    expect(HumanMessage.isInstance(unapplied[0])).toBe(true);

    gate.resolve();
    await run;
    expect(sink.told.map((message) => message.id)).toEqual(['human-1', 'ai-3']);
    expect(await countRows(server, 'thread_checkpoints', threadId)).toBe(checkpoints + 1);
    expect(await other.checkpointer.unappliedMessages(threadId)).toEqual([]);
    expect(messagesOf(await other.checkpointer.getTuple(latest(threadId))).map((message) => message.id)).toEqual(['human-0', 'ai-1', 'human-1', 'ai-3']);
    expect(await countRows(server, 'thread_messages', threadId)).toBe(4);
    expect(await gaps(other.checkpointer, threadId)).toEqual([]);
  });

  it('a person\'s message in a run that asks is stored once: one message row, no copy in stored values or pending writes', async () => {
    const server = await backend.open();
    const threadId = `once-${randomUUID()}`;
    const text = 'a long message from a person. '.repeat(40);
    await attempt(buildGraph(server.checkpointer), server, { messages: [new HumanMessage({ id: 'long-input', content: text })] }, configOf(threadId, 'input-step'));
    expect(await countRows(server, 'thread_messages', threadId)).toBe(2);
    expect((await storedValues(server, threadId)).filter((value) => value.includes('a long message'))).toEqual([]);
    expect(await storedWrites(server, threadId)).toEqual([]);
    expect(messagesOf(await (await backend.open()).checkpointer.getTuple(latest(threadId)))[0]?.content).toBe(text);
  });

  it('I16: an interrupt is stored at once (another server sees the question before the run settles); resumed, the run ends as MemorySaver\'s does', async () => {
    const server = await backend.open();
    const graph = buildGraph(server.checkpointer);
    const reference = buildGraph(new MemorySaver());
    const threadId = `interrupted-${randomUUID()}`;
    for (const [target, storage, thread] of [
      [graph, server, threadId],
      [reference, undefined, 'reference-interrupt'],
    ] as const) {
      await attempt(target, storage, say(0), configOf(thread, 'input-step'));
      await stream(target, say(1, 'use the tool'), configOf(thread, 'input-step'));
      if (storage !== undefined) {
        // Not settled yet: what a crash now would leave.
        const other = buildGraph((await backend.open()).checkpointer);
        const waiting = await other.getState(latest(thread));
        expect(waiting.tasks.flatMap((task) => task.interrupts.map((entry) => entry.value))).toEqual([{ question: 'may I?' }]);
        expect(plain(waiting.values)).toMatchObject({ messages: [{ id: 'human-0' }, { id: 'ai-1' }, { id: 'human-1' }, { id: 'ai-3', content: 'calling the tool' }] });
        expect(await gaps(other.checkpointer as BaseCheckpointSaver, thread)).toEqual([]);
      }
      await storage?.checkpointer.settle(thread);
      await attempt(target, storage, new Command({ resume: 'yes' }), configOf(thread, 'superseded'));
    }
    const other = buildGraph((await backend.open()).checkpointer);
    const ended = await other.getState(latest(threadId));
    expect(ended.next).toEqual([]);
    expect(plain(ended.values)).toEqual(plain((await reference.getState(latest('reference-interrupt'))).values));
    expect(await gaps(other.checkpointer as BaseCheckpointSaver, threadId)).toEqual([]);
  });

  it('an input checkpoint that nothing superseded is held until the run settles, then stored as it was asked', async () => {
    const server = await backend.open();
    const saver = server.checkpointer;
    const threadId = `cut-short-${randomUUID()}`;
    const checkpoint = { ...emptyCheckpoint(), id: '1f000000-0000-6000-8000-000000000001' };
    const answer = await saver.put(configOf(threadId, 'input-step'), checkpoint, { source: 'input', step: -1, parents: {} }, {});
    expect(answer.configurable?.checkpoint_id).toBe(checkpoint.id);
    // Held: a crash now loses an input no one was told was accepted.
    expect(await countRows(server, 'thread_checkpoints', threadId)).toBe(0);
    await saver.settle(threadId);
    expect(await countRows(server, 'thread_checkpoints', threadId)).toBe(1);
    const stored = await (await backend.open()).checkpointer.getTuple(latest(threadId));
    expect(stored?.checkpoint.id).toBe(checkpoint.id);
    expect(stored?.metadata?.source).toBe('input');
  });

  it('a saver asked nothing stores every put and every write at once (LangGraph\'s own callers)', async () => {
    const server = await backend.open();
    const threadId = `asked-nothing-${randomUUID()}`;
    const checkpoint = { ...emptyCheckpoint(), id: '1f000000-0000-6000-8000-000000000002' };
    const config = await server.checkpointer.put(configOf(threadId, 'nothing'), checkpoint, { source: 'input', step: -1, parents: {} }, {});
    await server.checkpointer.putWrites(config, [['messages', []]], 'a-task');
    expect(await countRows(server, 'thread_checkpoints', threadId)).toBe(1);
    expect(await countRows(server, 'thread_checkpoint_writes', threadId)).toBe(1);
  });

  // A checkpoint records the thread's last row when it is stored, not the highest row it
  // refers to: a later checkpoint that no longer holds the newest message (a removal, or a
  // fork from an older checkpoint) must not make that message look accepted but never applied.
  it('unappliedMessages names only messages no stored checkpoint held: not a reply a later checkpoint removed', async () => {
    const server = await backend.open();
    const threadId = `removed-${randomUUID()}`;
    const graph = buildGraph(server.checkpointer);
    for (let index = 0; index < 2; index++) await attempt(graph, server, say(index), configOf(threadId, 'input-step'));
    expect(await server.checkpointer.unappliedMessages(threadId)).toEqual([]);
    await graph.updateState(latest(threadId), { messages: [new RemoveMessage({ id: 'ai-3' })] });
    expect(messagesOf(await server.checkpointer.getTuple(latest(threadId))).map((message) => message.id)).toEqual(['human-0', 'ai-1', 'human-1']);
    expect((await server.checkpointer.unappliedMessages(threadId)).map((message) => message.id)).toEqual([]);
  });
}
