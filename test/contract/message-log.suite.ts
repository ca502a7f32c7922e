/**
 * The message log's contract (src/adapters/sql/message-log.ts), on both backends as
 * openStorage builds them (message-log-sqlite.test.ts, message-log-postgres.test.ts):
 * each message version is stored once, checkpoints carry a reference that does not grow
 * with the thread, and every checkpoint, the latest and the old ones, reads back as the
 * list LangGraph's own MemorySaver holds after the same operations (appends, RemoveMessage,
 * replacement by id), whether the reader has the messages in memory or not.
 */
import { AIMessage, AIMessageChunk, HumanMessage, RemoveMessage, SystemMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { Annotation, END, MemorySaver, START, StateGraph, messagesStateReducer } from '@langchain/langgraph';
import type { BaseCheckpointSaver, CheckpointTuple } from '@langchain/langgraph-checkpoint';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Storage } from '../../src/app/ports.js';
import { expandMessageRow } from '../../src/adapters/sql/message-log-codec.js';

export interface LogBackend {
  /** A server on the shared database; each call is another server (empty memory). */
  open(): Promise<Storage>;
  /** Rows of the thread's message log. */
  logRows(threadId: string): Promise<number>;
  /** The thread's stored checkpoints, and its stored pending writes (rows). */
  checkpointRows(threadId: string): Promise<number>;
  writeRows(threadId: string): Promise<number>;
  /** PostgreSQL only: the thread's blob rows for emptied channels (type 'empty'). */
  emptyBlobRows?(threadId: string): Promise<number>;
  /** Stored size in bytes of the thread's largest `messages` value (SQLite: the checkpoint document; PostgreSQL: the blob). */
  largestStoredMessages(threadId: string): Promise<number>;
  /** Stored bytes of the thread's pending writes to the `messages` channel. */
  messageWritesBytes(threadId: string): Promise<number>;
  /** Bytes stored for the thread's `__start__` channel (the graph's input), over all its checkpoints (SQLite: inline, plus checkpoint_values rows; PostgreSQL: its blobs). */
  inputBytes(threadId: string): Promise<number>;
  /** Bytes stored for the thread's `summary` channel, over all its checkpoints (SQLite: inline values and checkpoint_values rows; PostgreSQL: its blobs). */
  summaryBytes(threadId: string): Promise<number>;
  /** The thread's log rows, in seq order, as stored. */
  logValues(threadId: string): Promise<Array<{ messageId: string; type: string; value: Uint8Array }>>;
  /** Stores each of the thread's log rows as `rewrite` gives it back (rows as an older version wrote them). */
  rewriteLog(threadId: string, rewrite: (row: { messageId: string; type: string; value: Uint8Array }) => { type: string; value: Uint8Array }): Promise<void>;
  close(): Promise<void>;
}

const State = Annotation.Root({
  messages: Annotation<BaseMessage[]>({ reducer: messagesStateReducer, default: () => [] }),
});

function buildGraph(checkpointer: BaseCheckpointSaver) {
  return new StateGraph(State)
    // `undefined` fields, as a model's reply has them: a load drops them, and the loaded
    // copy the next turn holds must still be recognised as the same logged message.
    // Every other reply is a chunk, as a streamed reply is: the reducer turns it into a
    // new AIMessage, so the write and the checkpoint hold different messages.
    .addNode('respond', (state) => {
      const fields = { id: `ai-${state.messages.length}`, content: `reply to ${state.messages.length} messages`, name: undefined, usage_metadata: undefined };
      return { messages: [state.messages.length % 4 === 1 ? new AIMessageChunk(fields) : new AIMessage(fields)] };
    })
    .addEdge(START, 'respond')
    .addEdge('respond', END)
    .compile({ checkpointer });
}

type Graph = ReturnType<typeof buildGraph>;

async function turns(graph: Graph, threadId: string, from: number, count: number): Promise<void> {
  for (let index = from; index < from + count; index++) {
    await graph.invoke({ messages: [new HumanMessage({ id: `human-${index}`, content: `message ${index} ✓` })] }, { configurable: { thread_id: threadId } });
  }
}

/** Appends, a removal, and a replacement by id: the operations a thread's history sees. */
async function edits(graph: Graph, threadId: string): Promise<void> {
  const config = { configurable: { thread_id: threadId } };
  await turns(graph, threadId, 0, 3);
  await graph.updateState(config, { messages: [new RemoveMessage({ id: 'human-1' })] });
  await graph.updateState(config, { messages: [new AIMessage({ id: 'ai-1', content: 'an edited reply' })] });
  await turns(graph, threadId, 3, 2);
}

/** Each checkpoint's message list, newest first, as plain data. */
async function history(saver: BaseCheckpointSaver, threadId: string): Promise<unknown[]> {
  const lists: unknown[] = [];
  for await (const tuple of saver.list({ configurable: { thread_id: threadId } })) lists.push(plain(tuple));
  return lists;
}

function plain(tuple: CheckpointTuple | undefined): unknown {
  const messages = (tuple?.checkpoint.channel_values.messages ?? []) as BaseMessage[];
  return messages.map((message) => ({ type: message.type, id: message.id, content: message.content, class: message.constructor.name }));
}

/** Messages with every field a row must give back: tool calls and their results, usage, names, parts, kwargs. */
function richMessages(turn: number): BaseMessage[] {
  return [
    new SystemMessage({ id: `system-${turn}`, content: 'a note from the system', additional_kwargs: { vigil: { origin: 'system' } } }),
    new HumanMessage({ id: `human-${turn}`, name: 'ada', content: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] }),
    new AIMessage({
      id: `ai-${turn}`,
      content: '',
      tool_calls: [{ id: `call-${turn}`, name: 'lookup', args: { query: 'weather', nested: { days: [1, 2] } }, type: 'tool_call' }],
      invalid_tool_calls: [{ id: `bad-${turn}`, name: 'lookup', args: '{oops', error: 'not JSON', type: 'invalid_tool_call' }],
      usage_metadata: { input_tokens: 12, output_tokens: 3, total_tokens: 15 },
      response_metadata: { model_name: 'scripted', finish_reason: 'tool_calls' },
    }),
    new ToolMessage({ id: `tool-${turn}`, tool_call_id: `call-${turn}`, name: 'lookup', content: 'sunny ✓', status: 'success', artifact: { raw: [1, 2, 3] } }),
    new AIMessage({ id: `reply-${turn}`, content: 'It is sunny.', response_metadata: {}, additional_kwargs: {} }),
  ];
}

/** A message as its serialised form, every field in its order (a loaded message serialises its kwargs in the order they were loaded in). */
function wholeMessage(message: BaseMessage): string {
  return `${message.constructor.name} ${JSON.stringify(message)}`;
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

/** A backend opened before the suite's tests and closed after them; call inside a describe. */
export function openedBackend(makeBackend: () => Promise<LogBackend>): () => LogBackend {
  let backend: LogBackend;
  beforeAll(async () => {
    backend = await makeBackend();
  }, 60_000);
  afterAll(async () => {
    await backend.close();
  });
  return () => backend;
}

/** `channelRows`: the backend stores each channel's value as a row of its own (PostgreSQL), so `emptyBlobRows` can be asked; SQLite stores a checkpoint as one document. Known when the tests are declared, so a test that cannot apply is not declared, rather than skipped. */
export function messageLogSuite(makeBackend: () => Promise<LogBackend>, capabilities: { channelRows: boolean }): void {
  const opened = openedBackend(makeBackend);
  let backend: LogBackend;
  beforeAll(() => {
    backend = opened();
  });

  it('the graph\'s input, which the input checkpoint keeps, refers to the log: a person\'s message is stored once, and reads back as MemorySaver holds it', async () => {
    const server = await backend.open();
    const graph = buildGraph(server.checkpointer);
    const reference = buildGraph(new MemorySaver());
    const input = () => ({ messages: [new HumanMessage({ id: 'long-input', content: 'a long message from a person. '.repeat(40) })] });
    const config = { configurable: { thread_id: 'input' } };
    await graph.invoke(input(), config);
    await reference.invoke(input(), config);
    expect(await backend.logRows('input')).toBe(2);
    // A reference in place of the 1,200-character message.
    expect(await backend.inputBytes('input')).toBeLessThan(200);
    const inputsOf = async (saver: BaseCheckpointSaver) => {
      const inputs: unknown[] = [];
      for await (const tuple of saver.list(config)) {
        const start = tuple.checkpoint.channel_values.__start__ as { messages?: BaseMessage[] } | undefined;
        inputs.push(start?.messages?.map((message) => ({ id: message.id, content: message.content, class: message.constructor.name })) ?? null);
      }
      return inputs;
    };
    const fresh = await backend.open();
    expect(await inputsOf(server.checkpointer)).toEqual(await inputsOf(reference.checkpointer as BaseCheckpointSaver));
    expect(await inputsOf(fresh.checkpointer)).toEqual(await inputsOf(reference.checkpointer as BaseCheckpointSaver));
    expect((await inputsOf(fresh.checkpointer)).filter((entry) => entry !== null)).toHaveLength(1);
  });

  it('stores each message once, and a checkpoint\'s reference does not grow with the thread', async () => {
    const server = await backend.open();
    const graph = buildGraph(server.checkpointer);
    await turns(graph, 'grow', 0, 5);
    const early = await backend.largestStoredMessages('grow');
    await turns(graph, 'grow', 5, 25);
    const state = await graph.getState({ configurable: { thread_id: 'grow' } });
    const messages = (state.values as { messages: BaseMessage[] }).messages;
    expect(messages).toHaveLength(60);
    // One row per message, though each turn saved several checkpoints holding the list and
    // pending writes carrying the new messages.
    expect(await backend.logRows('grow')).toBe(60);
    expect(await backend.largestStoredMessages('grow')).toBe(early);
    expect(early).toBeLessThan(200);
    // The writes that carried each turn's new messages hold references (tens of bytes)
    // instead of the messages (about 250 bytes each here), except the 15 chunk replies,
    // which stay in their writes: all inline would be about 60 × 250.
    expect(await backend.messageWritesBytes('grow')).toBeLessThan(15 * 300 + 45 * 60);
  });

  it('rebuilds every checkpoint (appends, RemoveMessage, replacement by id) as LangGraph\'s MemorySaver holds it, with and without memory', async () => {
    const memory = new MemorySaver();
    await edits(buildGraph(memory), 'edits');
    const expected = await history(memory, 'edits');

    const writer = await backend.open();
    await edits(buildGraph(writer.checkpointer), 'edits');
    // The server that wrote it (messages in memory), and another one (rows only).
    expect(await history(writer.checkpointer, 'edits')).toEqual(expected);
    const reader = await backend.open();
    expect(await history(reader.checkpointer, 'edits')).toEqual(expected);
    expect(plain(await reader.checkpointer.getTuple({ configurable: { thread_id: 'edits' } }))).toEqual(expected[0]);

    // Time travel: an old checkpoint by id still has the removed message and the old reply.
    const tuples: CheckpointTuple[] = [];
    for await (const tuple of reader.checkpointer.list({ configurable: { thread_id: 'edits' } })) tuples.push(tuple);
    // The oldest checkpoint holding six messages: the end of the third turn.
    const beforeEdits = tuples.findLast((tuple) => {
      const ids = ((tuple.checkpoint.channel_values.messages ?? []) as BaseMessage[]).map((message) => message.id);
      return ids.length === 6;
    });
    expect(beforeEdits).toBeDefined();
    const old = await writer.checkpointer.getTuple(beforeEdits!.config);
    const oldMessages = old!.checkpoint.channel_values.messages as BaseMessage[];
    expect(oldMessages.map((message) => message.id)).toContain('human-1');
    expect(oldMessages.find((message) => message.id === 'ai-1')?.content).toBe('reply to 1 messages');

    // Five turns' ten messages, the replacement version, and the RemoveMessage itself (a
    // pending write, stored once like any message a write carries).
    expect(await backend.logRows('edits')).toBe(10 + 1 + 1);
  });

  it('a long channel value (the summary) is stored once per distinct value, and every checkpoint, old ones too, reads back its own', async () => {
    const memory = new MemorySaver();
    const writer = await backend.open();
    for (const saver of [memory, writer.checkpointer]) {
      const graph = buildSummaryGraph(saver);
      for (let index = 0; index < 7; index++) await graph.invoke({ messages: [new HumanMessage({ id: `human-${index}`, content: `message ${index}` })] }, { configurable: { thread_id: 'summary' } });
    }
    const summaries = async (saver: BaseCheckpointSaver) => {
      const found: unknown[] = [];
      for await (const tuple of saver.list({ configurable: { thread_id: 'summary' } })) found.push(tuple.checkpoint.channel_values.summary ?? null);
      return found;
    };
    const expected = await summaries(memory);
    expect(new Set(expected.filter(Boolean)).size).toBe(3);
    expect(await summaries(writer.checkpointer)).toEqual(expected);
    const reader = await backend.open();
    expect(await summaries(reader.checkpointer)).toEqual(expected);
    // Three distinct summaries of about 3 KB, in 14 checkpoints: stored inline, about 40 KB;
    // once each, plus a reference (tens of bytes) per checkpoint, about 10 KB.
    expect(await backend.summaryBytes('summary')).toBeLessThan(3 * 3_200 + 14 * 200);
  });

  // Only where channels are rows of their own (PostgreSQL).
  if (capabilities.channelRows) {
    it('a channel emptied at a version (the consumed input, a taken branch) stores no row there, and every checkpoint reads back as MemorySaver\'s, from memory and from the tables', async () => {
      const server = await backend.open();
      const graph = buildGraph(server.checkpointer);
      const reference = buildGraph(new MemorySaver());
      await turns(graph, 'emptied', 0, 4);
      await turns(reference, 'emptied', 0, 4);
      expect(await backend.emptyBlobRows!('emptied')).toBe(0);
      const expected = await history(reference.checkpointer as BaseCheckpointSaver, 'emptied');
      expect(await history(server.checkpointer, 'emptied')).toEqual(expected);
      expect(await history((await backend.open()).checkpointer, 'emptied')).toEqual(expected);
      // The next turn starts from the cache: the entry the put derived still matches the tables.
      const hits = (server.checkpointer as { cacheStats?: () => { hits: number } }).cacheStats?.().hits ?? 0;
      await turns(graph, 'emptied', 4, 1);
      expect((server.checkpointer as { cacheStats?: () => { hits: number } }).cacheStats?.().hits).toBeGreaterThan(hits);
    });
  }

  it('a row holds the message without the serializer wrapper and the id its column holds, and reads back bit for bit (I3): tool calls, usage, names, parts, kwargs; rows in the older, whole form read back the same', async () => {
    const Plain = Annotation.Root({ messages: Annotation<BaseMessage[]>({ reducer: messagesStateReducer, default: () => [] }) });
    const build = (saver: BaseCheckpointSaver) =>
      new StateGraph(Plain)
        .addNode('noop', () => ({}))
        .addEdge(START, 'noop')
        .addEdge('noop', END)
        .compile({ checkpointer: saver });
    const memory = new MemorySaver();
    const writer = await backend.open();
    for (const saver of [memory, writer.checkpointer]) {
      for (let turn = 0; turn < 2; turn++) await build(saver).invoke({ messages: richMessages(turn) }, { configurable: { thread_id: 'rich' } });
    }
    const latest = async (saver: BaseCheckpointSaver) => ((await saver.getTuple({ configurable: { thread_id: 'rich' } }))!.checkpoint.channel_values.messages as BaseMessage[]).map(wholeMessage);
    const expected = await latest(memory);
    expect(expected).toHaveLength(10);
    expect(await latest(writer.checkpointer)).toEqual(expected);
    expect(await latest((await backend.open()).checkpointer)).toEqual(expected);

    const rows = await backend.logValues('rich');
    // Issue 10: each row compact (the kwargs alone) and packed against the message dictionary.
    expect(rows.map((row) => row.type)).toEqual(Array.from({ length: 2 }, () => ['lcz:SystemMessage', 'lcz:HumanMessage', 'lcz:AIMessage', 'lcz:ToolMessage', 'lcz:AIMessage']).flat());
    const decoder = new TextDecoder();
    for (const row of rows) {
      const text = decoder.decode(row.value);
      expect(text).not.toContain('langchain_core');
      expect(text).not.toContain(row.messageId);
      expect(text).not.toContain('additional_kwargs');
      expect(row.value.byteLength).toBeLessThan(expandMessageRow(row.type, row.value, row.messageId).value.byteLength / 2);
    }
    // The plain reply: the serializer's JSON again, every key in its place.
    const reply = rows[4]!;
    const rebuilt = JSON.parse(decoder.decode(expandMessageRow(reply.type, reply.value, reply.messageId).value)) as { id: string[]; kwargs: Record<string, unknown> };
    expect(rebuilt.id).toEqual(['langchain_core', 'messages', 'AIMessage']);
    expect(Object.keys(rebuilt.kwargs).slice(0, 2)).toEqual(['id', 'content']);
    expect(rebuilt.kwargs).toMatchObject({ id: reply.messageId, content: 'It is sunny.' });

    // A log written before packing (compact rows in clear, type lc:<class>) reads back the same.
    await backend.rewriteLog('rich', (row) => {
      const whole = JSON.parse(decoder.decode(expandMessageRow(row.type, row.value, row.messageId).value)) as { id: string[]; kwargs: Record<string, unknown> };
      const { id: _id, ...rest } = whole.kwargs;
      const kwargs = Object.keys(whole.kwargs)[0] === 'id' ? rest : whole.kwargs;
      return { type: `lc:${whole.id[2]}`, value: new TextEncoder().encode(JSON.stringify(kwargs)) };
    });
    expect((await backend.logValues('rich')).every((row) => row.type.startsWith('lc:') && !decoder.decode(row.value).includes('langchain_core'))).toBe(true);
    expect(await latest((await backend.open()).checkpointer)).toEqual(expected);

    // A log an older version wrote (each row the serializer's whole JSON) reads back the same.
    await backend.rewriteLog('rich', (row) => expandMessageRow(row.type, row.value, row.messageId));
    expect((await backend.logValues('rich')).every((row) => row.type === 'json' && new TextDecoder().decode(row.value).includes('"langchain_core"'))).toBe(true);
    expect(await latest((await backend.open()).checkpointer)).toEqual(expected);
  });

  it('deleteThread removes the thread\'s log, and a new thread of the same id starts clean', async () => {
    const server = await backend.open();
    const graph = buildGraph(server.checkpointer);
    await turns(graph, 'again', 0, 3);
    await server.checkpointer.deleteThread('again');
    expect(await backend.logRows('again')).toBe(0);
    await turns(graph, 'again', 10, 1);
    const state = await graph.getState({ configurable: { thread_id: 'again' } });
    expect((state.values as { messages: BaseMessage[] }).messages.map((message) => message.id)).toEqual(['human-10', 'ai-1']);
  });
}
