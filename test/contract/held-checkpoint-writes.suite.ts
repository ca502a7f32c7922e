/**
 * The savers' holding of superseded writes (src/adapters/sql/held-checkpoint-writes.ts), on
 * both backends as openStorage builds them (run from message-log-sqlite.test.ts and
 * message-log-postgres.test.ts): a run that asks stores neither its input checkpoint nor its
 * finished tasks' writes once the next checkpoint holds what they say, the stored chain has
 * no gap, the state reads back as LangGraph's MemorySaver holds it, and whatever is not
 * superseded (an interrupt, a run cut short) is stored as before.
 */
import { AIMessage, HumanMessage, type BaseMessage } from '@langchain/core/messages';
import type { RunnableConfig } from '@langchain/core/runnables';
import { Annotation, Command, END, MemorySaver, START, StateGraph, interrupt, messagesStateReducer } from '@langchain/langgraph';
import { emptyCheckpoint, type BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';
import { beforeAll, expect, it } from 'vitest';
import { HOLD_SUPERSEDED_WRITES, type Storage } from '../../src/app/ports.js';
import { openedBackend, type LogBackend } from './message-log.suite.js';

const State = Annotation.Root({
  messages: Annotation<BaseMessage[]>({ reducer: messagesStateReducer, default: () => [] }),
  notes: Annotation<string[]>({ reducer: (previous, next) => [...previous, ...next], default: () => [] }),
});

/** START → respond → (tools → respond)* → END: one node per step, as vigil's chat graph. */
function buildGraph(checkpointer: BaseCheckpointSaver) {
  return new StateGraph(State)
    .addNode('respond', (state) => {
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

function configOf(threadId: string, held: boolean): RunnableConfig {
  return { configurable: { thread_id: threadId, ...(held ? { [HOLD_SUPERSEDED_WRITES]: true } : {}) } };
}

/** One attempt as the run coordinator drives it: streamed with durability 'sync', then the thread settled. */
async function attempt(graph: Graph, storage: Storage | undefined, input: unknown, config: RunnableConfig): Promise<void> {
  const stream = await graph.stream(input as never, { ...config, streamMode: 'values', durability: 'sync' });
  for await (const chunk of stream) void chunk;
  await storage?.checkpointer.settle?.(String(config.configurable?.thread_id));
}

function say(index: number, content = `message ${index}`) {
  return { messages: [new HumanMessage({ id: `human-${index}`, content })] };
}

function plain(values: unknown): unknown {
  const { messages, notes } = values as { messages: BaseMessage[]; notes: string[] };
  return { messages: messages.map((message) => ({ type: message.type, id: message.id, content: message.content })), notes };
}

/** Every stored checkpoint's parent is stored too (or there is none): the chain has no gap. */
async function gaps(saver: BaseCheckpointSaver, threadId: string): Promise<string[]> {
  const ids = new Set<string>();
  const parents: string[] = [];
  for await (const tuple of saver.list({ configurable: { thread_id: threadId } })) {
    ids.add(tuple.checkpoint.id);
    const parent = tuple.parentConfig?.configurable?.checkpoint_id as string | undefined;
    if (parent !== undefined) parents.push(parent);
  }
  return parents.filter((parent) => !ids.has(parent));
}

export function heldCheckpointWritesSuite(makeBackend: () => Promise<LogBackend>): void {
  const opened = openedBackend(makeBackend);
  let backend: LogBackend;
  beforeAll(() => {
    backend = opened();
  });

  it('a run that asks stores one checkpoint a turn fewer and no writes of its finished tasks; the chain has no gap; state and history read back as MemorySaver holds them', async () => {
    const server = await backend.open();
    const graph = buildGraph(server.checkpointer);
    const reference = buildGraph(new MemorySaver());
    for (let index = 0; index < 4; index++) {
      await attempt(graph, server, say(index), configOf('held', true));
      await attempt(graph, server, say(index), configOf('plain', false));
      await attempt(reference, undefined, say(index), configOf('reference', false));
    }
    // Plain: the input checkpoint, after __start__, after respond; held: the last two.
    expect(await backend.checkpointRows('plain')).toBe(12);
    expect(await backend.checkpointRows('held')).toBe(8);
    expect(await backend.writeRows('plain')).toBeGreaterThan(0);
    expect(await backend.writeRows('held')).toBe(0);
    expect(await gaps(server.checkpointer, 'held')).toEqual([]);
    const expected = plain((await reference.getState(configOf('reference', false))).values);
    // Read by this server (its cache) and by another one (the tables alone).
    const other = buildGraph((await backend.open()).checkpointer);
    expect(plain((await graph.getState(configOf('held', false))).values)).toEqual(expected);
    expect(plain((await other.getState(configOf('held', false))).values)).toEqual(expected);
    // Every stored checkpoint is one MemorySaver has too, with the same state.
    const referenceStates = new Map<string, unknown>();
    for await (const snapshot of reference.getStateHistory(configOf('reference', false))) referenceStates.set(`${snapshot.metadata?.source}:${snapshot.metadata?.step}`, plain(snapshot.values));
    let compared = 0;
    for await (const snapshot of other.getStateHistory(configOf('held', false))) {
      expect(snapshot.metadata?.source).not.toBe('input');
      expect(plain(snapshot.values)).toEqual(referenceStates.get(`${snapshot.metadata?.source}:${snapshot.metadata?.step}`));
      compared += 1;
    }
    expect(compared).toBe(8);
  });

  it('I16: an interrupt is stored at once (another server sees the question before the run settles); resumed, the run ends as MemorySaver\'s does', async () => {
    const server = await backend.open();
    const graph = buildGraph(server.checkpointer);
    const reference = buildGraph(new MemorySaver());
    for (const [target, storage, threadId] of [[graph, server, 'interrupted'], [reference, undefined, 'reference-interrupt']] as const) {
      await attempt(target, storage, say(0), configOf(threadId, true));
      const stream = await target.stream(say(1, 'use the tool') as never, { ...configOf(threadId, true), streamMode: 'values', durability: 'sync' });
      for await (const chunk of stream) void chunk;
      if (target === graph) {
        // Not settled yet: what a crash now would leave.
        const other = buildGraph((await backend.open()).checkpointer);
        const waiting = await other.getState(configOf(threadId, false));
        expect(waiting.tasks.flatMap((task) => task.interrupts.map((entry) => entry.value))).toEqual([{ question: 'may I?' }]);
        expect(await gaps(other.checkpointer as BaseCheckpointSaver, threadId)).toEqual([]);
      }
      await storage?.checkpointer.settle?.(threadId);
      await attempt(target, storage, new Command({ resume: 'yes' }), configOf(threadId, true));
    }
    const other = buildGraph((await backend.open()).checkpointer);
    const ended = await other.getState(configOf('interrupted', false));
    expect(ended.next).toEqual([]);
    expect(plain(ended.values)).toEqual(plain((await reference.getState(configOf('reference-interrupt', false))).values));
  });

  it('an input checkpoint that nothing superseded is held until the run settles, then stored as it was asked', async () => {
    const server = await backend.open();
    const saver = server.checkpointer;
    const checkpoint = { ...emptyCheckpoint(), id: '1f000000-0000-6000-8000-000000000001' };
    const answer = await saver.put(configOf('cut-short', true), checkpoint, { source: 'input', step: -1, parents: {} }, {});
    expect(answer.configurable?.checkpoint_id).toBe(checkpoint.id);
    // Held: a crash now loses an input no one was told was accepted.
    expect(await backend.checkpointRows('cut-short')).toBe(0);
    await saver.settle?.('cut-short');
    expect(await backend.checkpointRows('cut-short')).toBe(1);
    const stored = await (await backend.open()).checkpointer.getTuple(configOf('cut-short', false));
    expect(stored?.checkpoint.id).toBe(checkpoint.id);
    expect(stored?.metadata?.source).toBe('input');
  });

  it('a saver asked nothing stores every put and every write at once (LangGraph\'s own callers)', async () => {
    const server = await backend.open();
    const checkpoint = { ...emptyCheckpoint(), id: '1f000000-0000-6000-8000-000000000002' };
    const config = await server.checkpointer.put(configOf('asked-nothing', false), checkpoint, { source: 'input', step: -1, parents: {} }, {});
    await server.checkpointer.putWrites(config, [['messages', []]], 'a-task');
    expect(await backend.checkpointRows('asked-nothing')).toBe(1);
    expect(await backend.writeRows('asked-nothing')).toBe(1);
  });
}
