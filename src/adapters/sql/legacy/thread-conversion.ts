/**
 * The conversion of threads a previous version stored (LangGraph's savers' tables with vigil's
 * message log, and the history projection `thread_messages_v1`) into the thread store
 * (migration 25), run at open after the migrations: on SQLite by openSqliteStorage, on
 * PostgreSQL under the migration lock (several instances starting together: one converts, the
 * others then find nothing). One implementation; the SQL of each backend is in
 * thread-conversion-sqlite.ts and thread-conversion-postgres.ts.
 *
 * Per thread, everything or nothing in effect, so a crash anywhere and a second start finish
 * the job:
 *
 *  1. `begin`: the thread's rows in the new store (a crashed attempt's) go, and the fields of
 *     its `threads` row that storing history moves (updated_at, last visible message, last
 *     activity) are kept in `thread_fields_v1` unless already there (a crashed attempt moved
 *     them: the first snapshot is the true one). That row also marks the attempt: rows of the
 *     thread in the new store without it were not made by a conversion (a build with
 *     migration 25 but without this conversion ran on the database), and are not deleted:
 *     the conversion stops and says so.
 *  2. Every checkpoint of every namespace, oldest first, read by the old saver and put into
 *     the new one (ThreadSaver) with its id, parent and metadata, then its pending writes.
 *     History rows are written by the saver as it writes them for a run (visibility from
 *     metadata, I1), timed at the checkpoint's own time.
 *  3. Messages `thread_messages_v1` shows that no checkpoint held become history rows too.
 *  4. `finish`, one transaction: history rows take their run and time from
 *     `thread_messages_v1`, the thread's counters are counted again from history and its other
 *     fields restored, Telegram's position in history is moved to the new numbering, and the
 *     thread's old rows go. A thread with old rows left is one still to convert.
 *
 * When no old rows are left, the old tables are dropped here, not by a migration: migrations
 * are SQL run before this conversion at every open, so one that dropped them would run on the
 * first open after an upgrade, before their rows were converted. Nor does a migration need to
 * record the drop: the old checkpoint tables were made by the old savers' own setup, never by
 * a migration, so whether any old table exists is the record, and the check at open (one
 * query over the catalog) finds none once the job is done.
 */
import { AIMessage, BaseMessage, ChatMessage, HumanMessage, SystemMessage, ToolMessage } from '@langchain/core/messages';
import { WRITES_IDX_MAP, type BaseCheckpointSaver, type ChannelVersions, type Checkpoint, type CheckpointMetadata, type CheckpointPendingWrite, type PendingWrite, type SerializerProtocol } from '@langchain/langgraph-checkpoint';
import type { Logger } from 'pino';
import { projectMessage } from '../../../app/message-projection.js';
import { HISTORY_SINK, type HistorySink } from '../../../app/ports.js';
import type { Visibility } from '../../../domain/message-metadata.js';
import { storedToolCallViews } from '../../../domain/tools/tool-call-view.js';
import type { CheckpointStore } from '../checkpoint-store.js';
import { encodeMessageRow } from '../message-row-codec.js';
import type { ThreadSaver } from '../thread-saver.js';

/** A row of the old history projection, its JSON columns as text. */
export interface HistoryRowV1 {
  seq: number;
  messageId: string;
  type: string;
  content: string;
  additionalKwargs: string;
  responseMetadata: string;
  visibility: Visibility;
  runId: string | null;
  createdAt: string;
}

/** A row of the old history table as either driver returns it (PostgreSQL: its time as a Date). */
export interface StoredHistoryRowV1 {
  seq: number;
  message_id: string;
  type: string;
  content: string;
  additional_kwargs: string;
  response_metadata: string;
  visibility: Visibility;
  run_id: string | null;
  created_at: string | Date;
}

export function historyRowV1(row: StoredHistoryRowV1): HistoryRowV1 {
  return {
    seq: row.seq,
    messageId: row.message_id,
    type: row.type,
    content: row.content,
    additionalKwargs: row.additional_kwargs,
    responseMetadata: row.response_metadata,
    visibility: row.visibility,
    runId: row.run_id,
    createdAt: new Date(row.created_at).toISOString(),
  };
}

/** What the conversion needs of a backend: the old tables read and cleared, the new store. */
export interface ConversionBackend {
  /** The old tables this database has (one query over the catalog: the whole cost when there are none). */
  oldTables(): Promise<ReadonlySet<string>>;
  /** Ready to convert: the old saver on a database that has old checkpoints (undefined otherwise), `thread_fields_v1` made. */
  prepare(tables: ReadonlySet<string>): Promise<{ oldSaver: BaseCheckpointSaver | undefined }>;
  /** Threads with old rows (checkpoints or history), and how many old checkpoints there are. */
  pending(): Promise<{ threadIds: string[]; checkpoints: number }>;
  /** The thread's namespaces with old checkpoints, '' first. */
  namespaces(threadId: string): Promise<string[]>;
  /** Oldest first (LangGraph's ids sort by time). */
  checkpointIds(threadId: string, checkpointNs: string): Promise<string[]>;
  /** Step 1 (see above), one transaction; throws when the thread has rows in the new store that no conversion attempt made. */
  begin(threadId: string): Promise<void>;
  /** A saver over the new store with nothing in memory, and the store itself. */
  newStore(): { saver: ThreadSaver; store: CheckpointStore };
  /** Old history rows whose message the new history of the thread does not show, oldest first. */
  unshown(threadId: string): Promise<HistoryRowV1[]>;
  /** Step 4 (see above), one transaction. */
  finish(threadId: string): Promise<void>;
  /** Whether any old checkpoint or old history row is left. */
  anyLeft(): Promise<boolean>;
  /** The old tables go (one transaction). */
  dropOld(): Promise<void>;
}

export interface ConversionOptions {
  logger: Logger;
  /** Called once a thread's checkpoints are stored, and once it is finished: throwing there is a crash at that point (tests). */
  onThread?: ((threadId: string, stage: 'stored' | 'finished') => void | Promise<void>) | undefined;
}

/** The names `oldTables` looks for, besides the backend's own checkpoint tables. */
export const HISTORY_V1 = 'thread_messages_v1';
export const THREAD_FIELDS_V1 = 'thread_fields_v1';

const PROGRESS_EVERY_MS = 10_000;

/** The thread's rows in the new store were not made by an attempt of this conversion: deleting them could lose what was said since. */
export function notOursError(threadId: string): Error {
  return new Error(
    `thread ${JSON.stringify(threadId)} has rows in both the previous version's tables and the thread store, and the latter were not written by this conversion ` +
      '(was a build with migration 25 but without the conversion run on this database?): nothing was changed; move or delete one of them by hand, then start again',
  );
}

export async function convertLegacyThreads(backend: ConversionBackend, options: ConversionOptions): Promise<void> {
  const tables = await backend.oldTables();
  if (tables.size === 0) return;
  const { logger } = options;
  const started = performance.now();
  const { oldSaver } = await backend.prepare(tables);
  const { threadIds, checkpoints } = await backend.pending();
  if (threadIds.length > 0) logger.info({ threads: threadIds.length, checkpoints }, 'converting threads stored by the previous version to the thread store');
  // Progress every few seconds, within a long thread too.
  const progress = { threads: 0, checkpoints: 0, reportedAt: performance.now() };
  const tick = () => {
    progress.checkpoints++;
    if (performance.now() - progress.reportedAt < PROGRESS_EVERY_MS) return;
    progress.reportedAt = performance.now();
    logger.info(
      { threads: `${progress.threads}/${threadIds.length}`, checkpoints: `${progress.checkpoints}/${checkpoints}`, elapsedMs: Math.round(progress.reportedAt - started) },
      'converting threads to the thread store',
    );
  };
  for (const threadId of threadIds) {
    try {
      await convertThread(backend, oldSaver, threadId, tick, options);
    } catch (error) {
      throw new Error(`converting thread ${JSON.stringify(threadId)} to the thread store failed (the next start tries it again): ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
    progress.threads++;
  }
  // Old rows written meanwhile (an instance of the previous version still running on this
  // database) would be lost with the tables: they stay, for the next start.
  if (await backend.anyLeft()) {
    logger.warn(
      'old checkpoints or history rows were written during the conversion (is a previous version of vigil still running on this database?): the old tables stay, and the next start converts what they hold (and stops at a thread that also has rows in the thread store)',
    );
    return;
  }
  await backend.dropOld();
  if (threadIds.length > 0) {
    logger.info({ threads: threadIds.length, checkpoints: progress.checkpoints, elapsedMs: Math.round(performance.now() - started) }, 'converted threads to the thread store; the old tables are dropped');
  } else {
    logger.debug({ tables: [...tables] }, 'dropped the empty tables of the previous thread storage');
  }
}

/** One thread, every namespace; `tick` after each checkpoint stored. */
async function convertThread(backend: ConversionBackend, oldSaver: BaseCheckpointSaver | undefined, threadId: string, tick: () => void, options: ConversionOptions): Promise<void> {
  await backend.begin(threadId);
  const { saver, store } = backend.newStore();
  if (oldSaver !== undefined) {
    for (const checkpointNs of await backend.namespaces(threadId)) {
      const instances = new MessageInstances();
      for (const checkpointId of await backend.checkpointIds(threadId, checkpointNs)) {
        const tuple = await oldSaver.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: checkpointNs, checkpoint_id: checkpointId } });
        if (tuple === undefined) continue;
        const checkpoint = withIntegerVersions({ ...tuple.checkpoint, id: checkpointId, channel_values: instances.canonical(tuple.checkpoint.channel_values ?? {}) });
        const parentId = tuple.parentConfig?.configurable?.checkpoint_id as string | undefined;
        const at = isoOrNow(checkpoint.ts);
        // History rows no old history row describes keep the time of the checkpoint that first held them.
        const sink: HistorySink = { runId: null, now: () => at };
        const address = { thread_id: threadId, checkpoint_ns: checkpointNs };
        await saver.put({ configurable: { ...address, ...(parentId ? { checkpoint_id: parentId } : {}), [HISTORY_SINK]: sink } }, checkpoint, tuple.metadata ?? ({} as CheckpointMetadata), { ...checkpoint.channel_versions });
        for (const call of writeCalls(tuple.pendingWrites ?? [])) {
          await saver.putWrites({ configurable: { ...address, checkpoint_id: checkpointId } }, call.writes, call.taskId, '');
        }
        tick();
      }
    }
  }
  await addUnshownHistory(backend, store, saver.serde, threadId);
  await options.onThread?.(threadId, 'stored');
  await backend.finish(threadId);
  await options.onThread?.(threadId, 'finished');
}

/**
 * Messages the old history showed that no checkpoint held (a person's message accepted by a
 * run whose checkpoint was never stored): history rows after the converted ones, in their
 * old order. Numbered after every row a checkpoint refers to, they are what the new store
 * calls unapplied (ThreadSaver.unappliedMessages): the thread's next run takes them first, as
 * it would after the same crash under the new store. (Such a message in the middle of the old
 * history, which the previous version never left, would land at the end too.)
 */
async function addUnshownHistory(backend: ConversionBackend, store: CheckpointStore, serde: SerializerProtocol, threadId: string): Promise<void> {
  const rows = await backend.unshown(threadId);
  if (rows.length === 0) return;
  const key = await store.key(threadId, '', true);
  if (key === undefined) throw new Error('could not make the thread key');
  for (const row of rows) {
    const message = messageOf(row);
    const [serializerType, dumped] = await serde.dumpsTyped(message);
    const encoded = encodeMessageRow(serializerType, typeof dumped === 'string' ? new TextEncoder().encode(dumped) : dumped, row.messageId);
    const { row: projected } = projectMessage(message, row.runId, row.createdAt);
    await store.commit({
      key,
      threadId,
      rows: [
        {
          seq: (await store.maxSeq(key)) + 1,
          messageId: row.messageId,
          type: encoded.type,
          body: encoded.body,
          shown: true,
          facts: { visibility: row.visibility, preview: projected.preview, realUser: projected.isRealUserMessage },
        },
      ],
      marks: [],
      runId: row.runId,
      at: row.createdAt,
      values: [],
    });
  }
}

/**
 * A LangChain message from an old history row: what history shows of it is what the row
 * showed. The row kept a model message's tool calls as their redacted view (name, redacted
 * arguments); they come back as the message's tool calls, which history shows as that view.
 */
function messageOf(row: HistoryRowV1): BaseMessage {
  const content = JSON.parse(row.content) as string;
  const additional_kwargs = JSON.parse(row.additionalKwargs) as Record<string, unknown>;
  const response_metadata = JSON.parse(row.responseMetadata) as Record<string, unknown>;
  const fields = { id: row.messageId, content, additional_kwargs, response_metadata };
  switch (row.type) {
    case 'human':
      return new HumanMessage(fields);
    case 'ai': {
      const { tool_calls: views, ...kwargs } = additional_kwargs;
      const tool_calls = storedToolCallViews(views).map((view) => ({ type: 'tool_call' as const, id: view.id ?? undefined, name: view.name, args: (view.arguments ?? {}) as Record<string, unknown> }));
      return new AIMessage({ ...fields, additional_kwargs: kwargs, tool_calls });
    }
    case 'system':
      return new SystemMessage(fields);
    case 'tool':
      return new ToolMessage({ ...fields, tool_call_id: typeof additional_kwargs.tool_call_id === 'string' ? additional_kwargs.tool_call_id : '' });
    default:
      return new ChatMessage({ ...fields, role: row.type });
  }
}

/**
 * The pending writes of a checkpoint as putWrites calls, by task in the order read: a task's
 * ordinary writes in one call (numbered 0, 1, … as a task's one call numbered them), and each
 * write of a special channel (an error, an interrupt, a resume value) in a call of its own,
 * which takes its fixed index (WRITES_IDX_MAP) and replaces as it did.
 */
function writeCalls(pending: readonly CheckpointPendingWrite[]): { taskId: string; writes: PendingWrite[] }[] {
  const byTask = new Map<string, PendingWrite[]>();
  for (const [taskId, channel, value] of pending) {
    let writes = byTask.get(taskId);
    if (writes === undefined) byTask.set(taskId, (writes = []));
    writes.push([channel, value]);
  }
  const calls: { taskId: string; writes: PendingWrite[] }[] = [];
  for (const [taskId, writes] of byTask) {
    const ordinary = writes.filter(([channel]) => !(channel in WRITES_IDX_MAP));
    if (ordinary.length > 0) calls.push({ taskId, writes: ordinary });
    for (const write of writes) if (write[0] in WRITES_IDX_MAP) calls.push({ taskId, writes: [write] });
  }
  return calls;
}

/**
 * Channel versions as integers. LangGraph's PostgresSaver numbers versions as text,
 * `"<32-digit counter>.<fraction>"`; the new saver counts with numbers (getNextVersion), so
 * every version is its counter: the integer before the first dot. The same function over
 * channel_versions and versions_seen keeps every comparison LangGraph makes between them.
 */
export function integerVersion(version: number | string): number | string {
  if (typeof version !== 'string') return version;
  const counter = Number.parseInt(version.split('.')[0]!, 10);
  return Number.isSafeInteger(counter) ? counter : version;
}

export function withIntegerVersions(checkpoint: Checkpoint): Checkpoint {
  const convert = (versions: ChannelVersions): ChannelVersions => Object.fromEntries(Object.entries(versions).map(([channel, version]) => [channel, integerVersion(version)]));
  return {
    ...checkpoint,
    channel_versions: convert(checkpoint.channel_versions ?? {}),
    versions_seen: Object.fromEntries(Object.entries(checkpoint.versions_seen ?? {}).map(([node, versions]) => [node, convert(versions)])),
  };
}

/**
 * One instance per message version across a namespace's checkpoints. The new saver knows a
 * message it has stored by the instance it was given (a pointer compare per message, see
 * thread-message-memory.ts): the same message read again as a new instance would be stored
 * again as a new row. The old savers hand out the same instances while their message log's
 * memory holds them; a message stored inline in the document (before the log), or evicted,
 * comes back as a new instance, and is matched here by id and serialised form.
 */
class MessageInstances {
  readonly #known = new WeakSet<object>();
  readonly #byId = new Map<string, { message: BaseMessage; json: string }>();

  canonical(values: Record<string, unknown>): Record<string, unknown> {
    const result: Record<string, unknown> = { ...values };
    for (const [channel, value] of Object.entries(values)) {
      if (!isMessageList(value)) continue;
      result[channel] = value.map((message) => this.#one(message));
    }
    return result;
  }

  #one(message: BaseMessage): BaseMessage {
    if (this.#known.has(message)) return message;
    const json = JSON.stringify(message);
    const id = message.id as string;
    const known = this.#byId.get(id);
    if (known !== undefined && known.json === json) return known.message;
    this.#byId.set(id, { message, json });
    this.#known.add(message);
    return message;
  }
}

/** A non-empty list of messages that all carry a string id: what the new saver stores as rows (its isMessageList). */
function isMessageList(value: unknown): value is BaseMessage[] {
  return Array.isArray(value) && value.length > 0 && value.every((item) => BaseMessage.isInstance(item) && typeof item.id === 'string' && item.id !== '');
}

function isoOrNow(value: unknown): string {
  const time = typeof value === 'string' ? Date.parse(value) : Number.NaN;
  return new Date(Number.isFinite(time) ? time : Date.now()).toISOString();
}
