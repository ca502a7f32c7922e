/**
 * The conversion of a previous version's threads into the thread store
 * (src/adapters/sql/legacy/thread-conversion.ts), on both backends
 * (thread-conversion-sqlite.test.ts, thread-conversion-postgres.test.ts).
 *
 * A database is built as the previous version left it: migrations 1–24, threads written by
 * the previous version's checkpoint saver (legacy/, as LangGraph runs its graphs: turns, a
 * summary, a subgraph, an interrupt with a finished task's writes beside it), and its
 * history projection appended after each turn as that version's projector did. Then the
 * current storage opens it. Every checkpoint reads back as the old saver read it, history as
 * people saw it, counters and the Telegram position as they were; the old tables are gone,
 * a second open changes nothing, and a conversion cut short finishes at the next open.
 */
import { AIMessage, BaseMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { Annotation, Command, END, INTERRUPT, START, StateGraph, interrupt, messagesStateReducer } from '@langchain/langgraph';
import { compareWritesSortKeys, type BaseCheckpointSaver, type CheckpointTuple } from '@langchain/langgraph-checkpoint';
import { sql, type Kysely } from 'kysely';
import { pino, type Logger } from 'pino';
import { afterAll, expect, it } from 'vitest';
import type { Database } from '../../src/adapters/sql/database.js';
import type { SqlStorage } from '../../src/adapters/sql/sql-storage.js';
import { toStoredMessage } from '../../src/app/message-projection.js';
import type { StoredMessage } from '../../src/app/ports.js';
import { captureLogs } from '../helpers/log-capture.js';

export type ConversionHook = (threadId: string, stage: 'stored' | 'finished') => void;

/** A database as the previous version left it, and ways to open it now. */
export interface OldDatabase {
  readonly dialect: 'sqlite' | 'postgres';
  /** The previous version's checkpoint saver on it, its tables set up. */
  readonly saver: BaseCheckpointSaver;
  /** LangGraph's own saver on the same tables: threads stored before vigil's message log (whole message lists in each checkpoint). */
  readonly plainSaver: BaseCheckpointSaver;
  /** The previous version's saver numbering channel versions as text, "<32-digit counter>.<fraction>" (textVersion). */
  readonly textVersionSaver: BaseCheckpointSaver;
  /** Kysely on it (the app tables, the history projection under its old name). */
  readonly db: Kysely<Database>;
  /** Ends the previous version's connections. */
  closeOld(): Promise<void>;
  /** Migrations to the latest, then the conversion alone with a hook (a crash: the hook throws). */
  convert(onThread: ConversionHook): Promise<void>;
  /** Migrations to the latest, no conversion. */
  migrate(): Promise<void>;
  /** One SQL statement on it. */
  execute(statement: string): Promise<void>;
  /** The current storage on it, as the server opens it. */
  open(logger?: Logger): Promise<SqlStorage>;
  /** The database's tables (its schema's, on PostgreSQL). */
  tables(): Promise<string[]>;
  /** Rows of a table, or of one thread's rows in it (tables keyed by thread_id). */
  count(table: string, threadId?: string): Promise<number>;
  /** The Telegram chat's last sent history position. */
  sentSeq(threadId: string): Promise<number>;
  dispose(): Promise<void>;
}

export interface ConversionBackend {
  create(): Promise<OldDatabase>;
  /** Several servers may open one database at once (PostgreSQL). */
  concurrentOpens?: boolean;
}

const logger = pino({ level: 'silent' });
const USER = 'alice';
const BASE_TIME = Date.parse('2026-03-01T09:00:00.000Z');

// ---------- the graph the old data is written by ----------

/**
 * Versions as LangGraph's Python PostgresSaver numbers them ("00…0012.0.4417…"); the JS
 * savers number them 1, 2, 3. Both orders agree, and the new store counts with numbers.
 */
export function textVersion(current: number | string | undefined): string {
  const counter = current === undefined ? 0 : typeof current === 'number' ? current : Number.parseInt(current.split('.')[0]!, 10);
  return `${String(counter + 1).padStart(32, '0')}.${Math.random()}`;
}

const State = Annotation.Root({
  messages: Annotation<BaseMessage[]>({ reducer: messagesStateReducer, default: () => [] }),
  summary: Annotation<string | null>({ reducer: (_previous, next) => next, default: () => null }),
  notes: Annotation<string[]>({ reducer: (previous, next) => [...previous, ...next], default: () => [] }),
});

/** Counts `note`'s runs: a task whose pending writes were lost would run again and note another number. */
let noteRuns = 0;

/** A subgraph node: its checkpoints are stored under a namespace of its own. */
const child = new StateGraph(State)
  .addNode('think', (state) => ({ messages: [new AIMessage({ id: `child-${state.messages.length}`, content: `thought about ${state.messages.length} messages` })] }))
  .addEdge(START, 'think')
  .addEdge('think', END)
  .compile();

function lastText(state: typeof State.State): string {
  const content = state.messages.at(-1)?.content;
  return typeof content === 'string' ? content : '';
}

function graphOn(checkpointer: BaseCheckpointSaver) {
  return (
    new StateGraph(State)
      .addNode('respond', (state) => {
        const at = state.messages.length;
        const tool = lastText(state).includes('weather');
        return {
          messages: tool
            ? [
                new AIMessage({ id: `ai-${at}`, content: '', tool_calls: [{ id: `call-${at}`, name: 'weather', args: { city: 'Oslo', api_key: 'sk-secret-123' } }], response_metadata: { model_name: 'scripted' } }),
                new ToolMessage({ id: `tool-${at}`, content: 'cold', tool_call_id: `call-${at}` }),
                new AIMessage({ id: `ai-${at}-after`, content: 'It is cold in Oslo ✓', response_metadata: { model_name: 'scripted', finish_reason: 'stop' } }),
              ]
            : [new AIMessage({ id: `ai-${at}`, content: `reply ${at} ✓`, response_metadata: { model_name: 'scripted' }, usage_metadata: { input_tokens: at, output_tokens: 2, total_tokens: at + 2 } })],
          // A summary long enough to be stored once by hash (the old savers and the new one alike).
          summary: at >= 4 ? `Summary of ${at} messages: ${'the person asked about the weather and the agent answered. '.repeat(4)}` : state.summary,
        };
      })
      // Beside `ask` in one step: its writes stay pending on the checkpoint `ask` interrupts.
      .addNode('note', () => ({ notes: [`note run ${++noteRuns}`] }))
      .addNode('ask', (state) => {
        const answer = interrupt({ question: 'May I?', messages: state.messages.length });
        return { messages: [new AIMessage({ id: `ai-answer-${state.messages.length}`, content: `approved: ${String(answer)}` })] };
      })
      .addNode('child', child)
      .addConditionalEdges(START, (state) => {
        const text = lastText(state);
        if (text.startsWith('/ask')) return ['ask', 'note'];
        if (text.startsWith('/child')) return ['child'];
        return ['respond'];
      })
      .addEdge('respond', END)
      .addEdge('note', END)
      .addEdge('ask', END)
      .addEdge('child', END)
      .compile({ checkpointer })
  );
}

const configOf = (threadId: string) => ({ configurable: { thread_id: threadId } });

// ---------- the old history projection, as the previous version wrote it ----------

interface Turn {
  input: BaseMessage;
  runId: string;
  at: string;
}

/** Threads rows and the old projection: inserted as the previous version's thread repository did. */
async function createThread(old: OldDatabase, threadId: string, at: string): Promise<void> {
  await sql`INSERT INTO threads (id, user_id, agent_id, title, created_at, updated_at, last_user_activity_at, visible_count, last_visible_preview, last_visible_at, message_count)
    VALUES (${threadId}, ${USER}, 'helper', ${null}, ${at}, ${at}, ${null}, 0, ${null}, ${null}, 0)`.execute(old.db);
}

/** The previous version's projector after a run: the state's messages beyond the projection's count, with the run's id and time. */
async function project(old: OldDatabase, threadId: string, messages: readonly BaseMessage[], runId: string, at: string): Promise<void> {
  const thread = (await sql<{ message_count: number; visible_count: number }>`SELECT message_count, visible_count FROM threads WHERE id = ${threadId}`.execute(old.db)).rows[0]!;
  const count = Number(thread.message_count);
  const fresh = messages.slice(count).map((message) => toStoredMessage(message, runId, at));
  if (fresh.length === 0) return;
  for (const [index, row] of fresh.entries()) {
    await sql`INSERT INTO thread_messages (thread_id, seq, message_id, type, content, additional_kwargs, response_metadata, visibility, run_id, preview, created_at)
      VALUES (${threadId}, ${count + index}, ${row.id}, ${row.type}, ${JSON.stringify(row.content)}, ${JSON.stringify(row.additionalKwargs)}, ${JSON.stringify(row.responseMetadata)},
        ${row.visibility}, ${row.runId}, ${row.preview}, ${row.createdAt})`.execute(old.db);
  }
  const visible = fresh.filter((row) => row.visibility === 'user');
  const lastVisible = visible.at(-1);
  const realUser = fresh.some((row) => row.isRealUserMessage);
  await sql`UPDATE threads SET message_count = ${count + fresh.length}, visible_count = ${Number(thread.visible_count) + visible.length}, updated_at = ${at},
    last_visible_preview = ${lastVisible ? lastVisible.preview : sql`last_visible_preview`}, last_visible_at = ${lastVisible ? at : sql`last_visible_at`},
    last_user_activity_at = ${realUser ? at : sql`last_user_activity_at`} WHERE id = ${threadId}`.execute(old.db);
}

async function runTurns(old: OldDatabase, threadId: string, turns: readonly Turn[], saver = old.saver): Promise<void> {
  const graph = graphOn(saver);
  for (const turn of turns) {
    await graph.invoke({ messages: [turn.input] }, configOf(threadId));
    const state = await graph.getState(configOf(threadId));
    await project(old, threadId, state.values.messages as BaseMessage[], turn.runId, turn.at);
  }
}

let clock = 0;
function turnOf(threadId: string, input: BaseMessage): Turn {
  clock += 1;
  return { input, runId: `run-${threadId}-${clock}`, at: new Date(BASE_TIME + clock * 60_000).toISOString() };
}

const person = (id: string, content: HumanMessage['content']) => new HumanMessage({ id, content });
const synthetic = (id: string, content: string) => new HumanMessage({ id, content, additional_kwargs: { synthetic: true, trigger_type: 'question_unanswered', trigger_reason: 'silence for 2h' } });

/** The threads every case writes; answers their ids. */
async function writeOldThreads(old: OldDatabase, extra = 0): Promise<{ chat: string; asked: string; nested: string; lost: string; plain: string; small: string[] }> {
  const chat = 'chat-thread';
  await createThread(old, chat, new Date(BASE_TIME).toISOString());
  await runTurns(old, chat, [
    turnOf(chat, person('h-1', 'hello there')),
    turnOf(chat, person('h-2', [{ type: 'text', text: 'what is the weather?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }])),
    turnOf(chat, synthetic('s-3', 'You asked a question two hours ago; is it still open?')),
    // A tool call whose arguments hold a secret: history shows its redacted view.
    turnOf(chat, person('h-4', 'and the weather in Oslo, ü?')),
    turnOf(chat, person('h-5', 'thanks, bye')),
  ]);
  // Telegram had handed the chat history up to the second message (old numbering from 0).
  await sql`INSERT INTO telegram_chats (bot_id, chat_id, thread_id, user_id, chat_type, sent_seq, created_at, updated_at)
    VALUES (7, 42, ${chat}, ${USER}, 'private', 1, ${new Date(BASE_TIME).toISOString()}, ${new Date(BASE_TIME).toISOString()})`.execute(old.db);

  // Waits for a person: an interrupt, and the writes of the task that finished beside it.
  const asked = 'asked-thread';
  await createThread(old, asked, new Date(BASE_TIME).toISOString());
  await runTurns(old, asked, [turnOf(asked, person('h-a1', 'hi')), turnOf(asked, person('h-a2', '/ask to send the invoice'))], old.textVersionSaver);

  // A subgraph's checkpoints, under their namespace.
  const nested = 'nested-thread';
  await createThread(old, nested, new Date(BASE_TIME).toISOString());
  await runTurns(old, nested, [turnOf(nested, person('h-n1', '/child think'))]);

  // History showed a person's message that no checkpoint held (its run's checkpoint was never stored).
  const lost = 'lost-thread';
  await createThread(old, lost, new Date(BASE_TIME).toISOString());
  await runTurns(old, lost, [turnOf(lost, person('h-l1', 'first'))]);
  const state = await graphOn(old.saver).getState(configOf(lost));
  const unsaved = turnOf(lost, person('h-l2', 'the one that was never checkpointed'));
  await project(old, lost, [...(state.values.messages as BaseMessage[]), unsaved.input], unsaved.runId, unsaved.at);

  // Stored before the message log: each checkpoint holds its whole message list.
  const plain = 'plain-thread';
  await createThread(old, plain, new Date(BASE_TIME).toISOString());
  await runTurns(old, plain, [turnOf(plain, person('h-p1', 'before the log')), turnOf(plain, person('h-p2', 'weather?')), turnOf(plain, person('h-p3', 'ok'))], old.plainSaver);

  const small: string[] = [];
  for (let index = 0; index < extra; index++) {
    const threadId = `small-${index}`;
    small.push(threadId);
    await createThread(old, threadId, new Date(BASE_TIME).toISOString());
    await runTurns(old, threadId, [turnOf(threadId, person(`h-s${index}-1`, `hello ${index}`)), turnOf(threadId, person(`h-s${index}-2`, 'again'))]);
  }
  return { chat, asked, nested, lost, plain, small };
}

// ---------- what the previous version read, and what the current one must read ----------

type ShownMessage = Omit<StoredMessage, 'threadId'>;

interface Before {
  /** Every checkpoint of every (thread, namespace), newest first, as the old saver read it. */
  checkpoints: Map<string, CheckpointTuple[]>;
  /** History as the old projection showed it, oldest first. */
  history: Map<string, ShownMessage[]>;
  threads: Map<string, Record<string, unknown>>;
}

async function readBefore(old: OldDatabase): Promise<Before> {
  const checkpoints = new Map<string, CheckpointTuple[]>();
  const addresses = (await sql<{ thread_id: string; checkpoint_ns: string }>`SELECT DISTINCT thread_id, checkpoint_ns FROM checkpoints`.execute(old.db)).rows;
  for (const { thread_id, checkpoint_ns } of addresses) {
    const tuples: CheckpointTuple[] = [];
    for await (const tuple of old.saver.list({ configurable: { thread_id, checkpoint_ns } })) tuples.push(tuple);
    checkpoints.set(JSON.stringify([thread_id, checkpoint_ns]), tuples);
  }
  const history = new Map<string, ShownMessage[]>();
  const rows = (
    await sql<{ thread_id: string; seq: number; message_id: string; type: string; content: unknown; additional_kwargs: unknown; response_metadata: unknown; visibility: 'user' | 'internal'; run_id: string | null; created_at: string | Date }>`
      SELECT thread_id, seq, message_id, type, CAST(content AS TEXT) AS content, CAST(additional_kwargs AS TEXT) AS additional_kwargs, CAST(response_metadata AS TEXT) AS response_metadata,
        visibility, run_id, created_at FROM thread_messages ORDER BY thread_id, seq`.execute(old.db)
  ).rows;
  const json = (value: unknown) => JSON.parse(value as string) as unknown;
  for (const row of rows) {
    const list = history.get(row.thread_id) ?? [];
    history.set(row.thread_id, list);
    list.push({
      seq: Number(row.seq),
      id: row.message_id,
      type: row.type,
      content: json(row.content),
      additionalKwargs: json(row.additional_kwargs) as Record<string, unknown>,
      responseMetadata: json(row.response_metadata) as Record<string, unknown>,
      visibility: row.visibility,
      runId: row.run_id,
      createdAt: new Date(row.created_at).toISOString(),
    });
  }
  const threads = new Map<string, Record<string, unknown>>();
  for (const row of (await sql<Record<string, unknown>>`SELECT * FROM threads`.execute(old.db)).rows) threads.set(row.id as string, row);
  return { checkpoints, history, threads };
}

/** LangGraph's PostgresSaver numbers versions "<counter>.<fraction>": the new store keeps the counter (as the conversion does). */
function integerVersions<T>(versions: Record<string, T>): Record<string, T | number> {
  return Object.fromEntries(Object.entries(versions).map(([channel, version]) => [channel, typeof version === 'string' ? Number.parseInt(version.split('.')[0]!, 10) : version]));
}

function expectedTuple(tuple: CheckpointTuple): CheckpointTuple {
  const checkpoint = tuple.checkpoint;
  const sorted = [...(tuple.pendingWrites ?? [])].map((write, index) => ({ write, index }));
  // LangGraph's order for a checkpoint's writes (task path, task, index), which the old SQLite saver did not promise.
  sorted.sort((a, b) => compareWritesSortKeys(['', a.write[0], 0], ['', b.write[0], 0]) || a.index - b.index);
  return {
    ...tuple,
    checkpoint: {
      ...checkpoint,
      channel_versions: integerVersions(checkpoint.channel_versions),
      versions_seen: Object.fromEntries(Object.entries(checkpoint.versions_seen).map(([node, versions]) => [node, integerVersions(versions)])),
    },
    pendingWrites: sorted.map((entry) => entry.write),
  };
}

async function expectConverted(storage: SqlStorage, old: OldDatabase, before: Before): Promise<void> {
  // Every checkpoint, by id and by list, as the old saver read it (I3: metadata and messages bit for bit).
  for (const [address, tuples] of before.checkpoints) {
    const [threadId, checkpointNs] = JSON.parse(address) as [string, string];
    const listed: CheckpointTuple[] = [];
    for await (const tuple of storage.checkpointer.list({ configurable: { thread_id: threadId, checkpoint_ns: checkpointNs } })) listed.push(tuple);
    expect(listed.map((tuple) => tuple.config.configurable?.checkpoint_id)).toEqual(tuples.map((tuple) => tuple.config.configurable?.checkpoint_id));
    for (const [index, tuple] of tuples.entries()) {
      const expected = expectedTuple(tuple);
      const read = await storage.checkpointer.getTuple(tuple.config);
      for (const actual of [read!, listed[index]!]) {
        expect(actual.config).toEqual(expected.config);
        expect(actual.parentConfig).toEqual(expected.parentConfig);
        expect(actual.checkpoint).toEqual(expected.checkpoint);
        expect(JSON.stringify(actual.checkpoint.channel_values)).toBe(JSON.stringify(expected.checkpoint.channel_values));
        expect(JSON.stringify(actual.metadata)).toBe(JSON.stringify(expected.metadata));
        expect(actual.pendingWrites).toEqual(expected.pendingWrites);
        expect(JSON.stringify(actual.pendingWrites)).toBe(JSON.stringify(expected.pendingWrites));
      }
      // What is stored, not what memory holds.
      expect(await storage.checkpointer.getTupleFromStorage(tuple.config)).toEqual(read);
    }
  }
  // History as people saw it, and the thread's row as it was, its counters counted again.
  for (const [threadId, shown] of before.history) {
    const page = await storage.threads.history(USER, threadId, { visibility: 'all', limit: 500 });
    const strip = (message: StoredMessage) => ({ id: message.id, type: message.type, content: message.content, additionalKwargs: message.additionalKwargs, responseMetadata: message.responseMetadata, visibility: message.visibility, runId: message.runId, createdAt: message.createdAt });
    expect(page.messages.map(strip)).toEqual(shown.map(({ seq: _seq, ...message }) => message));
    const visible = await storage.threads.history(USER, threadId, { visibility: 'user', limit: 500 });
    expect(visible.messages.map((message) => message.id)).toEqual(shown.filter((message) => message.visibility === 'user').map((message) => message.id));
    const thread = await storage.threads.get(USER, threadId);
    const row = before.threads.get(threadId)!;
    const iso = (value: unknown) => (value === null ? null : new Date(value as string).toISOString());
    expect(thread).toMatchObject({
      messageCount: shown.length,
      visibleCount: shown.filter((message) => message.visibility === 'user').length,
      lastVisiblePreview: row.last_visible_preview,
      lastVisibleAt: iso(row.last_visible_at),
      lastUserActivityAt: iso(row.last_user_activity_at),
      updatedAt: iso(row.updated_at),
    });
    expect(Number(row.message_count)).toBe(shown.length);
  }
  // Each message version stored once per namespace, however many checkpoints hold it, and each message history showed that none held.
  const versions = new Set<string>();
  const held = new Set<string>();
  for (const [address, tuples] of before.checkpoints) {
    const [threadId, checkpointNs] = JSON.parse(address) as [string, string];
    for (const tuple of tuples) {
      for (const value of Object.values(tuple.checkpoint.channel_values)) {
        if (!Array.isArray(value) || !value.every((item) => BaseMessage.isInstance(item))) continue;
        for (const message of value as BaseMessage[]) {
          versions.add(JSON.stringify([address, message]));
          if (checkpointNs === '') held.add(JSON.stringify([threadId, message.id]));
        }
      }
    }
  }
  const unheld = [...before.history].flatMap(([threadId, shown]) => shown.filter((message) => !held.has(JSON.stringify([threadId, message.id]))));
  expect(unheld.map((message) => message.id)).toEqual(['h-l2']);
  expect(await old.count('thread_messages')).toBe(versions.size + unheld.length);
  // The old tables are gone.
  const tables = await old.tables();
  for (const table of ['checkpoints', 'writes', 'checkpoint_blobs', 'checkpoint_writes', 'checkpoint_migrations', 'checkpoint_messages', 'checkpoint_values', 'thread_messages_v1', 'thread_fields_v1']) {
    expect(tables).not.toContain(table);
  }
}

// ---------- the cases ----------

export function threadConversionSuite(backend: ConversionBackend): void {
  // Each case disposes of its database when it ends (PostgreSQL's connections are shared with other suites); these are what a failed case left.
  const opened = new Set<OldDatabase>();
  const create = async () => {
    const old = await backend.create();
    opened.add(old);
    return old;
  };
  const dispose = async (old: OldDatabase) => {
    opened.delete(old);
    await old.dispose();
  };
  afterAll(async () => {
    for (const old of opened) await old.dispose();
  });

  it('I3: every checkpoint of every thread (a summary, a subgraph, pending writes, an interrupt) reads back as the previous version read it; history, counters and Telegram’s position are as people saw them', async () => {
    const old = await create();
    const { chat, asked, nested, lost } = await writeOldThreads(old);
    const before = await readBefore(old);
    // The cases are really there.
    const chatLatest = before.checkpoints.get(JSON.stringify([chat, '']))![0]!;
    expect(typeof chatLatest.checkpoint.channel_values.summary).toBe('string');
    expect(typeof chatLatest.checkpoint.channel_versions.messages).toBe('number');
    expect([...before.checkpoints.keys()].some((address) => (JSON.parse(address) as string[])[0] === nested && (JSON.parse(address) as string[])[1] !== '')).toBe(true);
    const askedLatest = before.checkpoints.get(JSON.stringify([asked, '']))![0]!;
    expect(askedLatest.pendingWrites?.some(([, channel]) => channel === INTERRUPT)).toBe(true);
    expect(askedLatest.checkpoint.channel_versions.messages).toMatch(/^0{30}\d\d\.0\.\d+$/);
    const noted = askedLatest.pendingWrites?.find(([, channel]) => channel === 'notes')?.[2];
    expect(noted).toEqual([expect.stringMatching(/^note run \d+$/)]);
    const sentId = before.history.get(chat)![1]!.id;
    await old.closeOld();

    const storage = await old.open();
    try {
      await expectConverted(storage, old, before);
      // Telegram's position: the same message, in the new numbering.
      const history = await storage.threads.history(USER, chat, { visibility: 'all', limit: 500 });
      expect(await old.sentSeq(chat)).toBe(history.messages.find((message) => message.id === sentId)!.seq);
      // The message no checkpoint held is history's last, and what the thread's next run takes first.
      expect((await storage.checkpointer.unappliedMessages(lost)).map((message) => message.id)).toEqual(['h-l2']);

      // The threads go on: a new turn, time travel to an old checkpoint, the interrupt answered.
      const graph = graphOn(storage.checkpointer);
      await graph.invoke({ messages: [person('h-6', 'one more thing')] }, configOf(chat));
      const states = [];
      for await (const state of graph.getStateHistory(configOf(chat))) states.push(state);
      const chatBefore = before.checkpoints.get(JSON.stringify([chat, '']))!;
      expect(states.slice(-chatBefore.length).map((state) => state.config.configurable?.checkpoint_id)).toEqual(chatBefore.map((tuple) => tuple.config.configurable?.checkpoint_id));
      expect(states.length).toBeGreaterThan(chatBefore.length);
      const travelled = await graph.getState(chatBefore[2]!.config);
      expect(travelled.values.messages).toEqual(chatBefore[2]!.checkpoint.channel_values.messages);
      const resumed = await graph.invoke(new Command({ resume: 'yes' }), configOf(asked));
      expect((resumed.messages as BaseMessage[]).at(-1)!.content).toBe('approved: yes');
      // `note` finished before the interrupt: its writes are applied, not run again.
      expect(resumed.notes).toEqual(noted);
    } finally {
      await storage.close();
    }

    // A second open finds nothing to do, and changes nothing.
    const counts = async () => {
      const counted: Record<string, number> = {};
      for (const table of ['thread_keys', 'thread_messages', 'thread_checkpoints', 'thread_checkpoint_writes', 'thread_values']) counted[table] = await old.count(table);
      return counted;
    };
    const stored = await counts();
    const logs = captureLogs();
    const again = await old.open(logs.logger);
    await again.close();
    expect(await counts()).toEqual(stored);
    expect(logs.lines.filter((line) => /convert|previous thread storage/.test(line.msg))).toEqual([]);
    await dispose(old);
  });

  it('a conversion cut short (a crash after a thread’s checkpoints were stored, then one after a thread was finished) is finished by the next open, each thread once', async () => {
    const old = await create();
    const { small } = await writeOldThreads(old, 3);
    const before = await readBefore(old);
    await old.closeOld();
    const threadIds = [...new Set([...before.checkpoints.keys()].map((address) => (JSON.parse(address) as string[])[0]!))].sort();
    const crashAt = (victim: string, stage: 'stored' | 'finished'): ConversionHook => (threadId, at) => {
      if (threadId === victim && at === stage) throw new Error('killed');
    };

    // Killed with the third thread's checkpoints stored, its old rows still there and its counters moved.
    const third = threadIds[2]!;
    await expect(old.convert(crashAt(third, 'stored'))).rejects.toThrow(/killed/);
    expect(await old.count('checkpoints', threadIds[0])).toBe(0);
    expect(await old.count('checkpoints', third)).toBeGreaterThan(0);
    expect(await old.count('thread_keys', third)).toBeGreaterThan(0);

    // Started again, killed once a later thread was finished.
    const fifth = threadIds[4]!;
    await expect(old.convert(crashAt(fifth, 'finished'))).rejects.toThrow(/killed/);
    expect(await old.count('checkpoints', third)).toBe(0);
    expect(await old.count('checkpoints', fifth)).toBe(0);
    expect(await old.count('checkpoints', small.at(-1))).toBeGreaterThan(0);

    const storage = await old.open();
    try {
      await expectConverted(storage, old, before);
      // Each thread once: as many checkpoints as the old store had.
      expect(await old.count('thread_checkpoints')).toBe([...before.checkpoints.values()].reduce((sum, tuples) => sum + tuples.length, 0));
    } finally {
      await storage.close();
    }
    await dispose(old);
  });

  if (backend.concurrentOpens === true) {
    it('several instances opening the database together convert it once', async () => {
      const old = await create();
      await writeOldThreads(old, 2);
      const before = await readBefore(old);
      await old.closeOld();
      const storages = await Promise.all([old.open(), old.open(), old.open()]);
      try {
        await expectConverted(storages[1]!, old, before);
        expect(await old.count('thread_checkpoints')).toBe([...before.checkpoints.values()].reduce((sum, tuples) => sum + tuples.length, 0));
      } finally {
        await Promise.all(storages.map((storage) => storage.close()));
      }
      await dispose(old);
    });
  }

  it('never deletes thread store rows that no conversion attempt wrote: it stops, changing nothing, and says why', async () => {
    const old = await create();
    const { chat } = await writeOldThreads(old);
    const before = await readBefore(old);
    await old.closeOld();
    // A build with the thread store but without this conversion stored a turn of an old thread.
    await old.migrate();
    await old.execute(`INSERT INTO thread_keys (thread_id, checkpoint_ns) VALUES ('${chat}', '')`);
    await expect(old.open()).rejects.toThrow(/not written by this conversion/);
    expect(await old.count('thread_keys', chat)).toBe(1);
    expect(await old.count('checkpoints', chat)).toBe(before.checkpoints.get(JSON.stringify([chat, '']))!.length);
    await dispose(old);
  });

  it('a database the previous version left without threads: its empty old tables go at the first open', async () => {
    const old = await create();
    await old.closeOld();
    const storage = await old.open();
    await storage.close();
    const tables = await old.tables();
    expect(tables).toContain('thread_messages');
    for (const table of ['thread_messages_v1', 'thread_fields_v1', 'checkpoints', 'checkpoint_messages']) expect(tables).not.toContain(table);
    await dispose(old);
  });
}
