/**
 * vigil's checkpoint saver (src/adapters/sql/thread-saver.ts) over the thread store
 * (migration 25), on both backends as openStorage builds them (thread-saver-sqlite.test.ts,
 * thread-saver-postgres.test.ts). The reference for every read is LangGraph's own
 * MemorySaver after the same operations: every checkpoint, the latest and the old ones, must
 * read back exactly as it holds it, whether the reader has the rows in memory, is another
 * server on the same database, or decodes every row afresh (getTupleFromStorage). And the
 * store must stay small: each message version once, checkpoint rows that do not grow with the
 * thread, long values once per distinct value; history is the rows the checkpoints refer to.
 */
import { randomUUID } from 'node:crypto';
import { AIMessage, AIMessageChunk, HumanMessage, RemoveMessage, SystemMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { Annotation, END, MemorySaver, START, StateGraph, messagesStateReducer } from '@langchain/langgraph';
import { JsonPlusSerializer, type BaseCheckpointSaver, type CheckpointTuple } from '@langchain/langgraph-checkpoint';
import { beforeAll, expect, it } from 'vitest';
import { unpackCheckpointBody } from '../../src/adapters/sql/checkpoint-body-codec.js';
import { decodeMessageRow } from '../../src/adapters/sql/message-row-codec.js';
import type { SqlStorage } from '../../src/adapters/sql/sql-storage.js';
import {
  checkpointBodies,
  comparable,
  comparableHistory,
  countRows,
  latest,
  listTuples,
  messageRows,
  messagesOf,
  openedBackend,
  storedValues,
  threadKey,
  type StoreBackend,
} from '../helpers/thread-store.js';

const State = Annotation.Root({
  messages: Annotation<BaseMessage[]>({ reducer: messagesStateReducer, default: () => [] }),
  notes: Annotation<Record<string, unknown>>({ reducer: (_previous, next) => next, default: () => ({}) }),
});

/**
 * START → respond → END. The reply has `undefined` fields, as a model's reply has them (a
 * load drops them); every fourth one is a chunk, as a streamed reply is (the reducer turns it
 * into a new AIMessage, so the write and the checkpoint hold different messages).
 */
function buildGraph(checkpointer: BaseCheckpointSaver) {
  return new StateGraph(State)
    .addNode('respond', (state) => {
      const at = state.messages.length;
      const fields = { id: `ai-${at}`, content: `reply to ${at} messages ✓`, name: undefined, usage_metadata: undefined };
      return {
        messages: [at % 4 === 1 ? new AIMessageChunk(fields) : new AIMessage(fields)],
        notes: { seen: at, last: state.messages.at(-1)?.id ?? null, tags: ['a', 'ü'] },
      };
    })
    .addEdge(START, 'respond')
    .addEdge('respond', END)
    .compile({ checkpointer });
}

type Graph = ReturnType<typeof buildGraph>;

async function turns(graph: Graph, threadId: string, from: number, count: number, prefix = 'human'): Promise<void> {
  for (let index = from; index < from + count; index++) {
    await graph.invoke({ messages: [new HumanMessage({ id: `${prefix}-${index}`, content: `message ${index} ✓` })] }, latest(threadId));
  }
}

/** Appends, a removal, and a replacement by id. */
async function edits(graph: Graph, threadId: string): Promise<void> {
  await turns(graph, threadId, 0, 3);
  await graph.updateState(latest(threadId), { messages: [new RemoveMessage({ id: 'human-1' })] });
  await graph.updateState(latest(threadId), { messages: [new AIMessage({ id: 'ai-1', content: 'an edited reply' })] });
  await turns(graph, threadId, 3, 2);
}

/** Each state of the thread's history (getStateHistory), newest first, as text. */
async function stateHistory(graph: Graph, threadId: string): Promise<string[]> {
  const states: string[] = [];
  for await (const snapshot of graph.getStateHistory(latest(threadId))) states.push(JSON.stringify({ values: snapshot.values, next: snapshot.next, metadata: snapshot.metadata }));
  return states;
}

/** Each checkpoint read by id, decoded from its rows alone (the start-up I3 probe's read). */
async function fromStorage(storage: SqlStorage, tuples: readonly CheckpointTuple[]): Promise<string[]> {
  const found: string[] = [];
  for (const tuple of tuples) found.push(comparable(await storage.checkpointer.getTupleFromStorage(tuple.config)));
  return found;
}

/** Each checkpoint read by id through getTuple. */
async function byId(saver: BaseCheckpointSaver, tuples: readonly CheckpointTuple[]): Promise<string[]> {
  const found: string[] = [];
  for (const tuple of tuples) found.push(comparable(await saver.getTuple(tuple.config)));
  return found;
}

/**
 * The thread read every way there is, each compared with MemorySaver's: list and
 * getStateHistory on the server given (its memory), and on a fresh server; each checkpoint by
 * id on both, and decoded afresh.
 */
async function expectAsMemorySaver(backend: StoreBackend, server: SqlStorage, memory: MemorySaver, threadId: string, memoryThreadId = threadId): Promise<void> {
  const expected = await comparableHistory(memory, memoryThreadId);
  const expectedStates = await stateHistory(buildGraph(memory), memoryThreadId);
  expect(expected.length).toBeGreaterThan(0);
  const fresh = await backend.open();
  try {
    for (const reader of [server, fresh]) {
      expect(await comparableHistory(reader.checkpointer, threadId)).toEqual(expected);
      expect(await stateHistory(buildGraph(reader.checkpointer), threadId)).toEqual(expectedStates);
      expect(comparable(await reader.checkpointer.getTuple(latest(threadId)))).toBe(expected[0]);
      const tuples = await listTuples(reader.checkpointer, threadId);
      expect(await byId(reader.checkpointer, tuples)).toEqual(expected);
      expect(await fromStorage(reader, tuples)).toEqual(expected);
    }
  } finally {
    await fresh.close();
  }
}

/** Messages with every field a row must give back: tool calls and their results, invalid calls, usage, names, parts, nested and unicode kwargs, artifacts. */
function richMessages(turn: number): BaseMessage[] {
  return [
    new SystemMessage({ id: `system-${turn}`, content: 'a note from the system', additional_kwargs: { vigil: { origin: 'system' } } }),
    new HumanMessage({ id: `human-${turn}`, name: 'ada', content: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }] }),
    new HumanMessage({
      id: `synthetic-${turn}`,
      content: 'Continue our conversation naturally.',
      additional_kwargs: {
        synthetic: true,
        trigger_type: 'question_unanswered',
        trigger_reason: `silence ${turn}`,
        nested: { list: [1, 'two', { three: true, four: null }], emoji: '✓ ünïcödé 🙂 \u2028 "quoted" \\ back', empty: {}, deep: { a: { b: { c: [turn, -0.5, 1e21] } } } },
        flags: [false, null, 0, ''],
      },
    }),
    new AIMessage({
      id: `ai-${turn}`,
      content: '',
      name: 'vigil',
      tool_calls: [{ id: `call-${turn}`, name: 'lookup', args: { query: 'weather', nested: { days: [1, 2] } }, type: 'tool_call' }],
      invalid_tool_calls: [{ id: `bad-${turn}`, name: 'lookup', args: '{oops', error: 'not JSON', type: 'invalid_tool_call' }],
      usage_metadata: { input_tokens: 12, output_tokens: 3, total_tokens: 15, input_token_details: { cache_read: 4 } },
      response_metadata: { model_name: 'scripted', finish_reason: 'tool_calls', provider_message_id: `chatcmpl-${turn}` },
    }),
    new ToolMessage({ id: `tool-${turn}`, tool_call_id: `call-${turn}`, name: 'lookup', content: 'sunny ✓', status: 'success', artifact: { raw: [1, 2, 3], nested: { ok: true } } }),
    new AIMessage({
      id: `reply-${turn}`,
      content: [
        { type: 'text', text: 'It is sunny. 🌞' },
        { type: 'text', text: '' },
      ],
      response_metadata: {},
      additional_kwargs: {},
    }),
  ];
}

const SummaryState = Annotation.Root({
  messages: Annotation<BaseMessage[]>({ reducer: messagesStateReducer, default: () => [] }),
  summary: Annotation<string | null>({ reducer: (_previous, next) => next, default: () => null }),
});

/** A reply every turn; a new, long summary every third turn (as folds write one now and then). */
function buildSummaryGraph(checkpointer: BaseCheckpointSaver) {
  return new StateGraph(SummaryState)
    .addNode('respond', (state) => {
      const turn = Math.floor(state.messages.length / 2);
      const reply = new AIMessage({ id: `ai-${state.messages.length}`, content: `reply ${turn}` });
      return turn % 3 === 0 ? { messages: [reply], summary: `summary after turn ${turn}: ${'the conversation so far. '.repeat(120)}` } : { messages: [reply] };
    })
    .addEdge(START, 'respond')
    .addEdge('respond', END)
    .compile({ checkpointer });
}

const SubState = Annotation.Root({
  messages: Annotation<BaseMessage[]>({ reducer: messagesStateReducer, default: () => [] }),
  draft: Annotation<BaseMessage[]>({ reducer: messagesStateReducer, default: () => [] }),
});

/** START → research (a subgraph: sketch → answer, in its own namespace, with a `draft` channel of its own) → END. */
function buildGraphWithSubgraph(checkpointer: BaseCheckpointSaver) {
  const research = new StateGraph(SubState)
    .addNode('sketch', (state) => ({ draft: [new AIMessage({ id: `draft-${state.messages.length}`, content: 'thinking it over' })] }))
    .addNode('answer', (state) => ({ messages: [new AIMessage({ id: `answer-${state.messages.length}`, content: `answer after ${state.draft.length} drafts` })] }))
    .addEdge(START, 'sketch')
    .addEdge('sketch', 'answer')
    .addEdge('answer', END)
    .compile();
  const Outer = Annotation.Root({ messages: Annotation<BaseMessage[]>({ reducer: messagesStateReducer, default: () => [] }) });
  return new StateGraph(Outer)
    .addNode('research', async (state, config) => {
      const result = await research.invoke({ messages: state.messages }, config);
      return { messages: result.messages.slice(state.messages.length) };
    })
    .addEdge(START, 'research')
    .addEdge('research', END)
    .compile({ checkpointer });
}

export function threadSaverSuite(makeBackend: () => Promise<StoreBackend>): void {
  const opened = openedBackend(makeBackend);
  let backend: StoreBackend;
  beforeAll(() => {
    backend = opened();
  });

  it('every checkpoint (appends, RemoveMessage, replacement by id) reads back as LangGraph\'s MemorySaver holds it: from memory, on a fresh server, and decoded afresh', async () => {
    const memory = new MemorySaver();
    await edits(buildGraph(memory), 'edits');
    const writer = await backend.open();
    await edits(buildGraph(writer.checkpointer), 'edits');
    await expectAsMemorySaver(backend, writer, memory, 'edits');

    // Time travel: an old checkpoint still has the removed message and the first reply.
    const tuples = await listTuples((await backend.open()).checkpointer, 'edits');
    const beforeEdits = tuples.findLast((tuple) => messagesOf(tuple).length === 6);
    expect(beforeEdits).toBeDefined();
    const old = messagesOf(await writer.checkpointer.getTuple(beforeEdits!.config));
    expect(old.map((message) => message.id)).toContain('human-1');
    expect(old.find((message) => message.id === 'ai-1')?.content).toBe('reply to 1 messages ✓');
    expect(messagesOf(tuples[0]).find((message) => message.id === 'ai-1')?.content).toBe('an edited reply');
  });

  it('a long summary that changes every few turns: every checkpoint, old ones too, reads back its own, and each distinct value is stored once (thread_values)', async () => {
    const memory = new MemorySaver();
    const writer = await backend.open();
    for (const saver of [memory, writer.checkpointer]) {
      const graph = buildSummaryGraph(saver);
      for (let index = 0; index < 7; index++) await graph.invoke({ messages: [new HumanMessage({ id: `human-${index}`, content: `message ${index}` })] }, latest('summary'));
    }
    const summaries = async (saver: BaseCheckpointSaver) => (await listTuples(saver, 'summary')).map((tuple) => tuple.checkpoint.channel_values.summary ?? null);
    const expected = await summaries(memory);
    expect(new Set(expected.filter(Boolean)).size).toBe(3);
    expect(await summaries(writer.checkpointer)).toEqual(expected);
    expect(await summaries((await backend.open()).checkpointer)).toEqual(expected);
    // The rest of each checkpoint too, every way it can be read.
    const expectedAll = await comparableHistory(memory, 'summary');
    for (const reader of [writer, await backend.open()]) {
      expect(await comparableHistory(reader.checkpointer, 'summary')).toEqual(expectedAll);
      expect(await fromStorage(reader, await listTuples(reader.checkpointer, 'summary'))).toEqual(expectedAll);
    }
    // Three summaries in 21 checkpoints: three rows.
    const values = await storedValues(writer, 'summary');
    expect(values.filter((value) => value.includes('summary after turn'))).toHaveLength(3);
    // No checkpoint body holds one.
    for (const body of await checkpointBodies(writer, 'summary')) expect(body.byteLength).toBeLessThan(1_000);
  });

  it('stores each message version once, and a checkpoint row does not grow with the thread (10 and 200 messages)', async () => {
    const writer = await backend.open();
    const graph = buildGraph(writer.checkpointer);
    await turns(graph, 'grow', 0, 5);
    expect(await countRows(writer, 'thread_messages', 'grow')).toBe(10);
    const earlyBody = (await checkpointBodies(writer, 'grow'))[0]!;
    await turns(graph, 'grow', 5, 95);
    expect(messagesOf(await writer.checkpointer.getTuple(latest('grow')))).toHaveLength(200);
    // Each turn stored three checkpoints holding the list: still one row per message.
    expect(await countRows(writer, 'thread_messages', 'grow')).toBe(200);
    expect(await countRows(writer, 'thread_checkpoints', 'grow')).toBe(300);
    const bodies = await checkpointBodies(writer, 'grow');
    const lateBody = bodies[0]!;
    // Longer numbers (row numbers, versions, steps) and nothing per message: the document a
    // dozen characters longer, packed a few dozen bytes (measured: ~90 B at 10 messages,
    // ~112 B at 200, ~114 B at 600).
    expect(unpackCheckpointBody(lateBody).byteLength - unpackCheckpointBody(earlyBody).byteLength).toBeLessThan(16);
    expect(lateBody.byteLength).toBeLessThan(earlyBody.byteLength + 40);
    expect(lateBody.byteLength).toBeLessThan(200);
    // Each body packed (0x01) or, where packing would not shrink it, the serializer's JSON ('['); the latest refers to its 200 rows as one range.
    for (const body of bodies) expect(body[0] === 0x01 || body[0] === '['.charCodeAt(0)).toBe(true);
    const [document] = JSON.parse(new TextDecoder().decode(unpackCheckpointBody(bodies[0]!))) as [{ channel_values: Record<string, unknown> }];
    expect(document.channel_values.messages).toEqual({ 'vigil:message-log': [1, 200] });

    // Appends, a removal, a replacement: ten messages, and the replacement's new version.
    await edits(graph, 'edited');
    expect(await countRows(writer, 'thread_messages', 'edited')).toBe(11);
    // A fresh server continuing the thread adds only its new messages.
    await turns(buildGraph((await backend.open()).checkpointer), 'edited', 5, 1);
    expect(await countRows(writer, 'thread_messages', 'edited')).toBe(13);
  });

  it('I3: rows hold messages bit for bit (tool calls, invalid tool calls, usage, names, multimodal parts, nested and unicode kwargs, artifacts), on every read', async () => {
    const Plain = Annotation.Root({ messages: Annotation<BaseMessage[]>({ reducer: messagesStateReducer, default: () => [] }) });
    const build = (saver: BaseCheckpointSaver) =>
      new StateGraph(Plain)
        .addNode('noop', () => ({}))
        .addEdge(START, 'noop')
        .addEdge('noop', END)
        .compile({ checkpointer: saver });
    const memory = new MemorySaver();
    const writer = await backend.open();
    const originals = [...richMessages(0), ...richMessages(1)];
    for (const saver of [memory, writer.checkpointer]) {
      for (let turn = 0; turn < 2; turn++) await build(saver).invoke({ messages: richMessages(turn) }, latest('rich'));
    }
    const whole = (messages: BaseMessage[]) => messages.map((message) => `${message.constructor.name} ${JSON.stringify(message)}`);
    const expected = whole(messagesOf(await memory.getTuple(latest('rich'))));
    expect(expected).toHaveLength(12);
    expect(whole(messagesOf(await writer.checkpointer.getTuple(latest('rich'))))).toEqual(expected);
    const fresh = await backend.open();
    expect(whole(messagesOf(await fresh.checkpointer.getTuple(latest('rich'))))).toEqual(expected);
    expect(whole(messagesOf(await fresh.checkpointer.getTupleFromStorage(latest('rich'))))).toEqual(expected);
    // Time travel: the first turn's checkpoint too.
    const firstTurn = (await listTuples(memory, 'rich')).filter((tuple) => messagesOf(tuple).length === 6).map((tuple) => whole(messagesOf(tuple)));
    const firstTurnStored = (await listTuples(fresh.checkpointer, 'rich')).filter((tuple) => messagesOf(tuple).length === 6).map((tuple) => whole(messagesOf(tuple)));
    expect(firstTurnStored).toEqual(firstTurn);
    expect(firstTurn.length).toBeGreaterThan(0);

    // Each row: its message's type, packed, and decoded exactly the serializer's JSON of the message put.
    const rows = await messageRows(writer, 'rich');
    expect(rows.map((row) => row.messageId)).toEqual(originals.map((message) => message.id));
    expect(rows.map((row) => row.type)).toEqual(originals.map((message) => message.type));
    const serde = new JsonPlusSerializer();
    const decoder = new TextDecoder();
    for (const [index, row] of rows.entries()) {
      expect(row.body[0]).toBe(0x01);
      const [type, dumped] = await serde.dumpsTyped(originals[index]!);
      const decoded = decodeMessageRow(row.type, row.body, row.messageId);
      expect(decoded.type).toBe(type);
      expect(decoder.decode(decoded.value)).toBe(typeof dumped === 'string' ? dumped : decoder.decode(dumped));
      expect(row.body.byteLength).toBeLessThan(decoded.value.byteLength / 2);
    }
  });

  it('hands out copies: mutating a returned tuple (lists, values, metadata, versions, writes) or graph state changes no later read', async () => {
    const server = await backend.open();
    const memory = new MemorySaver();
    for (const saver of [memory, server.checkpointer]) await turns(buildGraph(saver), 'copies', 0, 3);
    const mutate = (tuple: CheckpointTuple) => {
      messagesOf(tuple).push(new HumanMessage({ id: 'intruder', content: 'not saved' }));
      messagesOf(tuple).reverse();
      (tuple.metadata as Record<string, unknown>).intruder = true;
      const notes = tuple.checkpoint.channel_values.notes as Record<string, unknown> | undefined;
      if (notes !== undefined) {
        notes.seen = -1;
        (notes.tags as string[] | undefined)?.push('c');
      }
      tuple.checkpoint.channel_versions.intruder = 99;
      tuple.checkpoint.versions_seen.intruder = { x: 1 };
      tuple.pendingWrites?.push(['task', 'messages', 'intruder']);
    };
    mutate((await server.checkpointer.getTuple(latest('copies')))!);
    for (const tuple of await listTuples(server.checkpointer, 'copies')) mutate(tuple);
    const graph = buildGraph(server.checkpointer);
    const snapshot = await graph.getState(latest('copies'));
    (snapshot.values as { messages: BaseMessage[] }).messages.length = 0;
    (snapshot.values as { notes: Record<string, unknown> }).notes.seen = -2;
    await expectAsMemorySaver(backend, server, memory, 'copies');
    // The next turn starts from the stored state, not a mutated copy.
    for (const saver of [memory, server.checkpointer]) await turns(buildGraph(saver), 'copies', 3, 1);
    await expectAsMemorySaver(backend, server, memory, 'copies');
    expect(messagesOf(await server.checkpointer.getTuple(latest('copies'))).some((message) => message.id === 'intruder')).toBe(false);
  });

  it('sees what another server wrote (no stale read); a thread another server deleted reads as gone; made again with the same id it starts clean, under a new key', async () => {
    const memory = new MemorySaver();
    const server = await backend.open();
    const other = await backend.open();
    const mine = buildGraph(server.checkpointer);
    const theirs = buildGraph(other.checkpointer);
    const reference = buildGraph(memory);
    await turns(mine, 'shared', 0, 3);
    await turns(reference, 'shared', 0, 3);
    const before = await server.checkpointer.getTuple(latest('shared'));
    await turns(theirs, 'shared', 3, 2);
    await turns(reference, 'shared', 3, 2);
    const seen = await server.checkpointer.getTuple(latest('shared'));
    expect(seen?.checkpoint.id).not.toBe(before?.checkpoint.id);
    expect(messagesOf(seen)).toHaveLength(10);
    await expectAsMemorySaver(backend, server, memory, 'shared');
    // This server goes on from the other's state, and the other sees it.
    await turns(mine, 'shared', 5, 1);
    await turns(reference, 'shared', 5, 1);
    await expectAsMemorySaver(backend, other, memory, 'shared');
    await expectAsMemorySaver(backend, server, memory, 'shared');
    expect(await countRows(server, 'thread_messages', 'shared')).toBe(12);

    const oldKey = await threadKey(server, 'shared');
    expect(oldKey).toBeDefined();
    await other.checkpointer.deleteThread('shared');
    expect(await server.checkpointer.getTuple(latest('shared'))).toBeUndefined();
    expect(await listTuples(server.checkpointer, 'shared')).toEqual([]);
    expect(await server.checkpointer.getTupleFromStorage(latest('shared'))).toBeUndefined();
    expect(await threadKey(server, 'shared')).toBeUndefined();
    for (const table of ['thread_messages', 'thread_checkpoints', 'thread_checkpoint_writes', 'thread_values'] as const) expect(await countRows(server, table, 'shared')).toBe(0);

    // Made again elsewhere: this server reads the new thread only.
    const again = new MemorySaver();
    await turns(theirs, 'shared', 0, 1, 'again');
    await turns(buildGraph(again), 'shared', 0, 1, 'again');
    const newKey = await threadKey(server, 'shared');
    expect(newKey).toBeDefined();
    expect(newKey).not.toBe(oldKey);
    expect(messagesOf(await server.checkpointer.getTuple(latest('shared'))).map((message) => message.id)).toEqual(['again-0', 'ai-1']);
    await expectAsMemorySaver(backend, server, again, 'shared');

    // Deleted and made again while this server still remembers the old key: its next write goes to the new key.
    await server.checkpointer.getTuple(latest('shared'));
    await other.checkpointer.deleteThread('shared');
    const third = new MemorySaver();
    await turns(theirs, 'shared', 0, 1, 'third');
    await turns(buildGraph(third), 'shared', 0, 1, 'third');
    const thirdKey = await threadKey(server, 'shared');
    await mine.updateState(latest('shared'), { messages: [new HumanMessage({ id: 'after', content: 'written by the first server' })] });
    await buildGraph(third).updateState(latest('shared'), { messages: [new HumanMessage({ id: 'after', content: 'written by the first server' })] });
    expect(await threadKey(server, 'shared')).toBe(thirdKey);
    expect(thirdKey).not.toBe(newKey);
    await expectAsMemorySaver(backend, server, third, 'shared');
    expect(await countRows(server, 'thread_messages', 'shared')).toBe(3);

    // Deleted again: this server's read finds no thread, and its write (with the key it remembers, now gone) makes a new one.
    await other.checkpointer.deleteThread('shared');
    await turns(mine, 'shared', 0, 1, 'fourth');
    expect(messagesOf(await other.checkpointer.getTuple(latest('shared'))).map((message) => message.id)).toEqual(['fourth-0', 'ai-1']);
    expect(await threadKey(server, 'shared')).not.toBe(thirdKey);
  });

  it('history and checkpoints agree: history lists the ids of the latest checkpoint\'s messages, in order, once each, first versions; a subgraph\'s messages are not history; a thread deleted elsewhere takes its history with it', async () => {
    const server = await backend.open();
    const userId = randomUUID();
    const threadId = randomUUID();
    await server.threads.create({ id: threadId, userId, agentId: 'agent', title: null }, new Date().toISOString());
    const graph = buildGraph(server.checkpointer);
    await turns(graph, threadId, 0, 6);
    const ids = async (reader: SqlStorage) => (await reader.threads.history(userId, threadId, { visibility: 'all', limit: 1_000 })).messages.map((message) => message.id);
    const checkpointIds = messagesOf(await server.checkpointer.getTuple(latest(threadId))).map((message) => message.id);
    expect(checkpointIds).toHaveLength(12);
    expect(await ids(server)).toEqual(checkpointIds);
    expect(await ids(await backend.open())).toEqual(checkpointIds);
    expect(await server.threads.get(userId, threadId)).toMatchObject({ messageCount: 12, visibleCount: 12 });

    // A replacement by id: history keeps the first version; a removal: history keeps the message (I14).
    await graph.updateState(latest(threadId), { messages: [new AIMessage({ id: 'ai-1', content: 'an edited reply' })] });
    await graph.updateState(latest(threadId), { messages: [new RemoveMessage({ id: 'human-2' })] });
    await turns(graph, threadId, 6, 1);
    const history = (await (await backend.open()).threads.history(userId, threadId, { visibility: 'all', limit: 1_000 })).messages;
    expect(history.map((message) => message.id)).toEqual([...checkpointIds, 'human-6', 'ai-12']);
    expect(history.find((message) => message.id === 'ai-1')?.content).toBe('reply to 1 messages ✓');
    expect(new Set(history.map((message) => message.id)).size).toBe(history.length);
    expect(await server.threads.get(userId, threadId)).toMatchObject({ messageCount: 14 });

    // A subgraph's namespace has messages of its own (and the parent's it was given): none is history.
    const withSubgraph = randomUUID();
    await server.threads.create({ id: withSubgraph, userId, agentId: 'agent', title: null }, new Date().toISOString());
    const outer = buildGraphWithSubgraph(server.checkpointer);
    for (let index = 0; index < 2; index++) {
      await outer.invoke({ messages: [new HumanMessage({ id: `${withSubgraph}-human-${index}`, content: `question ${index}` })] }, latest(withSubgraph));
    }
    const parent = messagesOf(await server.checkpointer.getTuple(latest(withSubgraph))).map((message) => message.id);
    expect(parent).toEqual([`${withSubgraph}-human-0`, 'answer-1', `${withSubgraph}-human-1`, 'answer-3']);
    const namespaces = (await listTuples(server.checkpointer, withSubgraph)).map((tuple) => tuple.config.configurable?.checkpoint_ns as string);
    const inner = [...new Set(namespaces)].filter((namespace) => namespace !== '');
    expect(inner.length).toBeGreaterThan(0);
    let innerRows = 0;
    for (const namespace of inner) {
      const rows = await messageRows(server, withSubgraph, namespace);
      innerRows += rows.length;
      expect(rows.every((row) => row.visibility === null)).toBe(true);
    }
    expect(innerRows).toBeGreaterThan(0);
    expect((await server.threads.history(userId, withSubgraph, { visibility: 'all', limit: 1_000 })).messages.map((message) => message.id)).toEqual(parent);
    expect(await server.threads.get(userId, withSubgraph)).toMatchObject({ messageCount: 4 });

    // Deleted through another server's repository (vigil's own path): gone here too, history
    // with it; made again with the same id, it starts clean under a new key.
    const oldKey = await threadKey(server, threadId);
    const other = await backend.open();
    expect(await other.threads.delete(userId, threadId)).toBe(true);
    expect(await server.checkpointer.getTuple(latest(threadId))).toBeUndefined();
    expect(await server.threads.history(userId, threadId, { visibility: 'all', limit: 1_000 })).toEqual({ messages: [], nextCursor: null });
    await server.threads.create({ id: threadId, userId, agentId: 'agent', title: null }, new Date().toISOString());
    await turns(graph, threadId, 0, 1, 'again');
    expect(await threadKey(server, threadId)).not.toBe(oldKey);
    expect((await other.threads.history(userId, threadId, { visibility: 'all', limit: 1_000 })).messages.map((message) => message.id)).toEqual(['again-0', 'ai-1']);
    expect(messagesOf(await other.checkpointer.getTuple(latest(threadId))).map((message) => message.id)).toEqual(['again-0', 'ai-1']);
    expect(await other.threads.get(userId, threadId)).toMatchObject({ messageCount: 2 });
  });

  it('with little memory (maxThreads 1, maxMessages 3) every read is still right, and turns taken one after another still store each message version once', async () => {
    for (const [label, messageMemory] of [
      ['threads', { maxThreads: 1 }],
      ['messages', { maxMessages: 3 }],
    ] as const) {
      const server = await backend.open({ messageMemory });
      const memory = new MemorySaver();
      const threads = [`${label}-a`, `${label}-b`];
      // Turns on the two threads interleaved, so each evicts the other.
      for (let index = 0; index < 4; index++) {
        for (const threadId of threads) {
          await turns(buildGraph(server.checkpointer), threadId, index, 1);
          await turns(buildGraph(memory), threadId, index, 1);
        }
      }
      for (const threadId of threads) {
        await graphEdits(server, memory, threadId);
        await expectAsMemorySaver(backend, server, memory, threadId);
        expect(await countRows(server, 'thread_messages', threadId)).toBe(10 + 1);
      }
    }
  });

  it('runs on more threads at once than memory keeps still store each message once: a key evicted between a run\'s read and its writes knows the state the run holds', async () => {
    const server = await backend.open({ messageMemory: { maxThreads: 1 } });
    const threads = [`busy-${randomUUID()}`, `busy-${randomUUID()}`, `busy-${randomUUID()}`];
    // Each round's runs side by side: their steps interleave, so every key is evicted mid-run.
    for (let index = 0; index < 4; index++) await Promise.all(threads.map((threadId) => turns(buildGraph(server.checkpointer), threadId, index, 1)));
    for (const threadId of threads) {
      expect(messagesOf(await server.checkpointer.getTuple(latest(threadId)))).toHaveLength(8);
      expect(await countRows(server, 'thread_messages', threadId)).toBe(8);
    }
  });
}

/** A removal and a replacement by id on a thread, on both savers. */
async function graphEdits(server: SqlStorage, memory: MemorySaver, threadId: string): Promise<void> {
  for (const saver of [server.checkpointer, memory]) {
    const graph = buildGraph(saver);
    await graph.updateState(latest(threadId), { messages: [new RemoveMessage({ id: 'human-1' })] });
    await graph.updateState(latest(threadId), { messages: [new AIMessage({ id: 'ai-1', content: 'an edited reply' })] });
    await turns(graph, threadId, 4, 1);
  }
}
