/**
 * vigil's LangGraph checkpoint saver, the same on SQLite and PostgreSQL (each behind a
 * CheckpointStore): a thread's messages and checkpoints in one store (migration 25), so a
 * turn's cost follows what is new in it, not the thread's age (issue 10).
 *
 *  - Each message version is written once, as a row of `thread_messages` numbered in its
 *    thread; a checkpoint keeps, in place of a message list, the ranges of its rows'
 *    numbers. What this process has written or read stays in memory (thread-message-memory.ts),
 *    so a turn serialises only its new messages and deserialises none.
 *  - The rows of the history channel (`messages` of namespace '') are the thread's history:
 *    each message id shown once, with its visibility (I1: decided by metadata), its run and
 *    time, written in the transaction that stores the checkpoint referring to it, with the
 *    thread's counters. History is never out of step with the checkpoints.
 *  - A checkpoint row is its ids, the last row number it refers to, and one packed body
 *    (checkpoint-body-codec.ts); channel values of 128 bytes or more are stored once per
 *    distinct value, by hash (`thread_values`).
 *  - Input checkpoints and task writes a run's next checkpoint supersedes are held back
 *    (held-checkpoint-writes.ts); what a held checkpoint adds to history is written at once.
 *
 * A run's configurable may carry a HISTORY_SINK (ports.ts): the run's id and clock for the
 * rows it adds to history, and a listener told of them once they are committed.
 */
import { createHash } from 'node:crypto';
import type { BaseMessage } from '@langchain/core/messages';
import type { RunnableConfig } from '@langchain/core/runnables';
import {
  BaseCheckpointSaver,
  TASKS,
  WRITES_IDX_MAP,
  compareWritesSortKeys,
  copyCheckpoint,
  maxChannelVersion,
  writesSortKey,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  type PendingWrite,
  type SerializerProtocol,
} from '@langchain/langgraph-checkpoint';
import { HISTORY_SINK, type HistorySink, type StoredMessage } from '../../app/ports.js';
import { projectMessage } from '../../app/message-projection.js';
import { packCheckpointBody, unpackCheckpointBody } from './checkpoint-body-codec.js';
import { StoreConflict, type CheckpointStore, type CommitRequest, type CommitResult, type HistoryFacts, type StoredCheckpoint, type StoredMessageRow, type StoredWrite } from './checkpoint-store.js';
import { HeldCheckpointWrites, type HeldPut } from './held-checkpoint-writes.js';
import { rangesOf } from './message-ranges.js';
import { SerialByKey } from './serial-by-key.js';
import { storedValueHash } from './stored-reference.js';
import { ThreadMessageMemory, type MessageMemoryLimits, type PlannedRow, type PlannedValues } from './thread-message-memory.js';

/** The key of the reference a checkpoint stores in place of a channel value kept in `thread_values`. */
export const STORED_VALUE_REF = 'vigil:value';
/** Serialised values below this many bytes stay in the checkpoint. */
const INLINE_VALUE_BYTES = 128;
/** The channel whose messages, in namespace '', are the thread's history. */
const HISTORY_CHANNEL = 'messages';
/** Tries of a write whose key or row numbers another writer changed meanwhile. */
const COMMIT_ATTEMPTS = 4;
/** Keys (thread, namespace) remembered, and stored values kept loaded. */
const MAX_KEYS = 4_096;
const MAX_VALUES = 1_024;

export interface ThreadSaverOptions {
  memory?: Partial<MessageMemoryLimits>;
  /** Runs each write (SQLite: behind the storage's gate, see sqlite-storage.ts). */
  gate?: <T>(work: () => Promise<T>) => Promise<T>;
  serde?: SerializerProtocol;
}

interface Address {
  threadId: string;
  checkpointNs: string;
  checkpointId: string | undefined;
}

export class ThreadSaver extends BaseCheckpointSaver<number> {
  readonly #store: CheckpointStore;
  readonly #memory: ThreadMessageMemory;
  readonly #gate: <T>(work: () => Promise<T>) => Promise<T>;
  /** (thread, namespace) → key, as last read or made; a write with a key since deleted is refused by the database and asks again. */
  readonly #keys = new Map<string, number>();
  /** `${key}\0${hash}` → a stored value's bytes (immutable by construction). */
  readonly #values = new Map<string, { type: string; value: Uint8Array }>();
  /** One write per key at a time (row numbering, memory). */
  readonly #serial = new SerialByKey();
  readonly #held = new HeldCheckpointWrites({
    putNow: (put) => this.#putNow(put),
    putWritesNow: (held) => this.#putWritesNow(held.config, held.writes, held.taskId, held.taskPath),
    storeMessagesOf: (put) => this.#putNow(put, { messagesOnly: true }).then(() => undefined),
  });

  constructor(store: CheckpointStore, options: ThreadSaverOptions = {}) {
    super(options.serde);
    this.#store = store;
    this.#memory = new ThreadMessageMemory(this.serde, options.memory);
    this.#gate = options.gate ?? ((work) => work());
  }

  override getNextVersion(current: number | undefined): number {
    // Versions of checkpoints converted from LangGraph's PostgreSQL format were strings ("…0012.0.4…"): their integer part orders them.
    const value = typeof current === 'string' ? Number.parseInt(current, 10) : current;
    return typeof value === 'number' && Number.isFinite(value) ? value + 1 : 1;
  }

  override getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    return this.#read(config, false);
  }

  /** getTuple with every message from its row, nothing from or into memory (checks of what is stored: the start-up I3 probe). */
  getTupleFromStorage(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    return this.#read(config, true);
  }

  override async *list(config: RunnableConfig, options: CheckpointListOptions = {}): AsyncGenerator<CheckpointTuple> {
    const { limit, before, filter } = options;
    const threadId = config.configurable?.thread_id as unknown;
    const checkpointNs = config.configurable?.checkpoint_ns as unknown;
    const wanted = Object.entries(filter ?? {}).filter(([, value]) => value !== undefined);
    const rows = await this.#store.list({
      threadId: typeof threadId === 'string' && threadId !== '' ? threadId : undefined,
      checkpointNs: typeof checkpointNs === 'string' ? checkpointNs : undefined,
      before: typeof before?.configurable?.checkpoint_id === 'string' ? before.configurable.checkpoint_id : undefined,
      // A metadata filter is applied to the decoded bodies, so the limit after it.
      limit: wanted.length === 0 ? limit : undefined,
    });
    let yielded = 0;
    for (const row of rows) {
      if (limit !== undefined && yielded >= limit) return;
      const tuple = await this.#tuple(row, false);
      if (!wanted.every(([key, value]) => contains((tuple.metadata as Record<string, unknown> | undefined)?.[key], value))) continue;
      yielded++;
      yield tuple;
    }
  }

  override put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions = {}): Promise<RunnableConfig> {
    return this.#held.put(config, checkpoint, metadata, newVersions);
  }

  override putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath = ''): Promise<void> {
    return this.#held.putWrites(config, writes, taskId, taskPath);
  }

  /** A run's attempt on the thread ended: what is still held is stored now. */
  settle(threadId: string): Promise<void> {
    return this.#held.settle(threadId);
  }

  override async deleteThread(threadId: string): Promise<void> {
    this.#held.forgetThread(String(threadId));
    try {
      await this.#gate(() => this.#store.deleteThread(String(threadId)));
    } finally {
      this.forgetThread(String(threadId));
    }
  }

  /** What this process remembers of a thread goes (its rows were deleted, here or by the thread's deletion elsewhere in a transaction). */
  forgetThread(threadId: string): void {
    for (const [name, key] of this.#keys) {
      if ((JSON.parse(name) as [string, string])[0] !== threadId) continue;
      this.#keys.delete(name);
      this.#memory.forget(key);
    }
  }

  /**
   * Messages history shows that no stored checkpoint of the thread holds yet: a person's
   * message accepted by a run whose process ended before its checkpoint was stored (a held
   * checkpoint's messages are written at once, the checkpoint later). The next run of the
   * thread takes them first.
   */
  async unappliedMessages(threadId: string): Promise<BaseMessage[]> {
    const rows = await this.#store.unapplied(threadId);
    if (rows.length === 0) return [];
    const key = await this.#store.key(threadId, '', false);
    return key === undefined ? [] : this.#memory.messagesOf(key, rows);
  }

  /** The messages of history rows, decoded (from memory where it holds them). */
  async historyMessages(key: number, rows: readonly StoredMessageRow[]): Promise<BaseMessage[]> {
    return this.#memory.messagesOf(key, rows);
  }

  // ---------- reading ----------

  async #read(config: RunnableConfig, fresh: boolean): Promise<CheckpointTuple | undefined> {
    const address = addressOf(config);
    if (address === undefined) return undefined;
    const read = await this.#store.read(address.threadId, address.checkpointNs, address.checkpointId);
    if (read === undefined) return undefined;
    if (!fresh) {
      this.#remember(address, read.key);
      this.#memory.sawMaxSeq(read.key, read.maxSeq);
    }
    return read.checkpoint === undefined ? undefined : this.#tuple(read.checkpoint, fresh);
  }

  async #tuple(stored: StoredCheckpoint, fresh: boolean): Promise<CheckpointTuple> {
    const [body, metadata] = (await this.serde.loadsTyped('json', unpackCheckpointBody(stored.body))) as [Omit<Checkpoint, 'id'>, CheckpointMetadata];
    if (body.v < 4 && stored.parentId !== null) await this.#migratePendingSends(stored.key, stored.parentId, body);
    const values = await this.#restoreValues(stored.key, body.channel_values ?? {}, fresh);
    const checkpoint: Checkpoint = {
      v: body.v,
      id: stored.checkpointId,
      ts: body.ts,
      channel_values: await this.#memory.restore(stored.key, values, (ranges) => this.#store.messages(stored.key, ranges), {
        fresh,
        historyChannel: stored.checkpointNs === '' ? HISTORY_CHANNEL : undefined,
      }),
      channel_versions: body.channel_versions,
      versions_seen: body.versions_seen,
    };
    const address = { thread_id: stored.threadId, checkpoint_ns: stored.checkpointNs };
    return {
      config: { configurable: { ...address, checkpoint_id: stored.checkpointId } },
      checkpoint,
      metadata,
      parentConfig: stored.parentId === null ? undefined : { configurable: { ...address, checkpoint_id: stored.parentId } },
      pendingWrites: await this.#pendingWrites(stored.writes),
    };
  }

  /** A checkpoint of a format before 4 keeps its sends in its parent's writes (as LangGraph's savers migrate them). */
  async #migratePendingSends(key: number, parentId: string, body: Omit<Checkpoint, 'id'>): Promise<void> {
    const sends = (await this.#store.writes(key, parentId)).filter((write) => write.channel === TASKS).sort(byWritesSortKey);
    body.channel_values ??= {};
    body.channel_values[TASKS] = await Promise.all(sends.map((write) => this.serde.loadsTyped(write.type ?? 'json', write.value ?? '')));
    const versions = Object.values(body.channel_versions);
    body.channel_versions[TASKS] = versions.length > 0 ? maxChannelVersion(...versions) : this.getNextVersion(undefined);
  }

  /** Values stored by hash, loaded again (each read gets its own copy). */
  async #restoreValues(key: number, values: Record<string, unknown>, fresh: boolean): Promise<Record<string, unknown>> {
    const hashes = Object.values(values).map((value) => storedValueHash(value, STORED_VALUE_REF)).filter((hash): hash is string => hash !== undefined);
    if (hashes.length === 0) return values;
    const missing = fresh ? hashes : hashes.filter((hash) => !this.#values.has(valueKey(key, hash)));
    const fetched = missing.length > 0 ? await this.#store.values(key, missing) : new Map<string, { type: string; value: Uint8Array }>();
    const restored = { ...values };
    for (const [channel, value] of Object.entries(values)) {
      const hash = storedValueHash(value, STORED_VALUE_REF);
      if (hash === undefined) continue;
      const row = fetched.get(hash) ?? this.#values.get(valueKey(key, hash));
      if (row === undefined) throw new Error(`checkpoint value ${hash} of thread key ${key} is missing`);
      if (!fresh) this.#keepValue(key, hash, row);
      restored[channel] = ((await this.serde.loadsTyped(row.type, row.value)) as unknown[])[0];
    }
    return restored;
  }

  async #pendingWrites(writes: readonly StoredWrite[]): Promise<CheckpointPendingWrite[]> {
    const sorted = [...writes].sort(byWritesSortKey);
    return Promise.all(sorted.map(async (write): Promise<CheckpointPendingWrite> => [write.taskId, write.channel, await this.serde.loadsTyped(write.type ?? 'json', write.value ?? '')]));
  }

  // ---------- writing ----------

  /** Store a checkpoint, or (`messagesOnly`) only the rows it adds, for a checkpoint held back. */
  #putNow(put: HeldPut, options: { messagesOnly?: boolean } = {}): Promise<RunnableConfig> {
    const { config, checkpoint, metadata } = put;
    const threadId = config.configurable?.thread_id as unknown;
    if (typeof threadId !== 'string' || threadId === '') throw new Error('Missing "thread_id" field in passed "config.configurable".');
    const checkpointNs = (config.configurable?.checkpoint_ns as string | undefined) ?? '';
    const parentId = (config.configurable?.checkpoint_id as string | undefined) ?? null;
    const history = checkpointNs === '' ? HISTORY_CHANNEL : undefined;
    const prepared = copyCheckpoint(checkpoint);
    return this.#write({ threadId, checkpointNs }, historySinkOf(config), {
      plan: (key, firstSeq) => this.#memory.plan(key, prepared.channel_values, firstSeq, history),
      checkpoint:
        options.messagesOnly === true
          ? undefined
          : async (key, planned) => {
              const stored = await this.#storedBody(key, { ...prepared, channel_values: planned.values }, metadata);
              return { values: stored.values, checkpoint: { checkpointId: checkpoint.id, parentId, lastSeq: planned.lastSeq, body: stored.body } };
            },
    }).then(() => ({ configurable: { thread_id: threadId, checkpoint_ns: checkpointNs, checkpoint_id: checkpoint.id } }));
  }

  /**
   * A run's input (a person's message, a trigger's task) written to the thread's history
   * before the run's graph starts, in one transaction that also answers the messages history
   * held that no stored checkpoint did (unappliedMessages): the run takes those first. The
   * checkpoint applying the input is stored later, with the reply (HOLD_INPUT_STEP); until
   * then the input is durable here, and told to the sink as stored.
   */
  async storeInput(threadId: string, messages: readonly BaseMessage[], sink: HistorySink | undefined): Promise<BaseMessage[]> {
    const { unapplied, key } = await this.#write({ threadId, checkpointNs: '' }, sink, {
      plan: (key, firstSeq) => this.#memory.planMessages(key, messages, firstSeq),
      unapplied: true,
    });
    return unapplied.length === 0 ? [] : this.#memory.messagesOf(key, unapplied);
  }

  /**
   * Plan rows, commit them with history's facts (and a checkpoint, when given), learn what
   * was stored and tell the sink: one writer per (thread, namespace), again from the plan when
   * another writer took the key or a row number meanwhile.
   */
  #write(
    address: Pick<Address, 'threadId' | 'checkpointNs'>,
    sink: HistorySink | undefined,
    steps: {
      plan: (key: number, firstSeq: number) => Promise<PlannedValues>;
      checkpoint?: ((key: number, planned: PlannedValues) => Promise<{ values: { hash: string; type: string; value: Uint8Array }[]; checkpoint: NonNullable<CommitRequest['checkpoint']> }>) | undefined;
      unapplied?: boolean;
    },
  ): Promise<{ key: number; unapplied: StoredMessageRow[] }> {
    const { threadId, checkpointNs } = address;
    const history = checkpointNs === '' ? threadId : undefined;
    return this.#serial.run(addressName(address), () =>
      this.#gate(async () => {
        for (let attempt = 1; ; attempt++) {
          const key = await this.#keyOf({ ...address, checkpointId: undefined });
          const firstSeq = this.#memory.nextSeq(key) ?? (await this.#store.maxSeq(key)) + 1;
          const planned = await steps.plan(key, firstSeq);
          // A held checkpoint whose messages are all stored already (a run's input, stored first): nothing to write.
          if (steps.checkpoint === undefined && steps.unapplied !== true && planned.rows.length === 0 && planned.marks.length === 0) return { key, unapplied: [] };
          const at = sink?.now() ?? new Date().toISOString();
          const runId = sink?.runId ?? null;
          const facts = new Map<number, HistoryFacts>();
          const factsOf = (seq: number, message: BaseMessage) => {
            const { row, classification } = projectMessage(message, runId, at);
            const fact = { visibility: classification.visibility, preview: row.preview, realUser: row.isRealUserMessage };
            facts.set(seq, fact);
            return fact;
          };
          // History shows a message id once: of several candidates in one write, the first (the database checks the rows before).
          const candidates = new Set<string>();
          const first = (messageId: string) => !candidates.has(messageId) && candidates.add(messageId) !== undefined;
          const marks = planned.marks.filter((mark) => first(mark.message.id as string)).map((mark) => ({ seq: mark.seq, messageId: mark.message.id as string, facts: factsOf(mark.seq, mark.message) }));
          const rows = planned.rows.map((row) => ({ ...row, facts: row.shown && first(row.messageId) ? factsOf(row.seq, row.loaded) : undefined }));
          const stored = await steps.checkpoint?.(key, planned);
          let result: CommitResult;
          try {
            result = await this.#store.commit({ key, threadId: history, rows, marks, runId, at, values: stored?.values ?? [], checkpoint: stored?.checkpoint, unapplied: steps.unapplied === true });
          } catch (error) {
            if (!(error instanceof StoreConflict) || attempt >= COMMIT_ATTEMPTS) throw error;
            // The thread was deleted (its key is gone) or another writer numbered rows meanwhile: ask again.
            if (error.what === 'key') this.#forgetKey({ ...address, checkpointId: undefined });
            this.#memory.forgetNextSeq(key);
            continue;
          }
          const shown = new Set(result.shown);
          this.#memory.learn(key, planned, shown);
          for (const value of stored?.values ?? []) this.#keepValue(key, value.hash, value);
          if (sink !== undefined && shown.size > 0) this.#announce(sink, threadId, planned.rows, planned.marks, shown, facts, runId, at);
          return { key, unapplied: result.unapplied };
        }
      }),
    );
  }

  /** The checkpoint's body and the large values it refers to by hash. */
  async #storedBody(key: number, checkpoint: Checkpoint, metadata: CheckpointMetadata) {
    const values: { hash: string; type: string; value: Uint8Array }[] = [];
    const channelValues: Record<string, unknown> = { ...checkpoint.channel_values };
    for (const [channel, value] of Object.entries(channelValues)) {
      if (value === undefined || value === null || (typeof value !== 'string' && typeof value !== 'object') || rangesOf(value) !== undefined) continue;
      // Wrapped in an array: stored and loaded as it would be inside the checkpoint's document.
      const [type, dumped] = await this.serde.dumpsTyped([value]);
      const bytes = typeof dumped === 'string' ? new TextEncoder().encode(dumped) : dumped;
      if (bytes.byteLength < INLINE_VALUE_BYTES) continue;
      // 128 bits of SHA-256: values are told apart within one thread key, where a collision is
      // out of reach, and a checkpoint refers to each value in 22 characters, not 43.
      const hash = createHash('sha256').update(type).update('\0').update(bytes).digest().subarray(0, 16).toString('base64url');
      if (!this.#values.has(valueKey(key, hash))) values.push({ hash, type, value: bytes });
      channelValues[channel] = { [STORED_VALUE_REF]: hash };
    }
    const { id: _id, ...rest } = checkpoint;
    const [type, document] = await this.serde.dumpsTyped([{ ...rest, channel_values: channelValues }, metadata]);
    if (type !== 'json') throw new Error(`a checkpoint serialised as ${type}, not json`);
    return { values, body: packCheckpointBody(typeof document === 'string' ? new TextEncoder().encode(document) : document) };
  }

  async #putWritesNow(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath: string): Promise<void> {
    const threadId = config.configurable?.thread_id as unknown;
    const checkpointId = config.configurable?.checkpoint_id as unknown;
    if (typeof threadId !== 'string' || threadId === '') throw new Error('Missing thread_id field in config.configurable.');
    if (typeof checkpointId !== 'string' || checkpointId === '') throw new Error('Missing checkpoint_id field in config.configurable.');
    const address: Address = { threadId, checkpointNs: (config.configurable?.checkpoint_ns as string | undefined) ?? '', checkpointId: undefined };
    const rows: StoredWrite[] = await Promise.all(
      writes.map(async ([channel, value], index) => {
        const [type, dumped] = await this.serde.dumpsTyped(value);
        return { taskId, idx: WRITES_IDX_MAP[channel] ?? index, channel, type, value: typeof dumped === 'string' ? new TextEncoder().encode(dumped) : dumped, taskPath };
      }),
    );
    const replace = writes.every(([channel]) => channel in WRITES_IDX_MAP);
    await this.#serial.run(addressName(address), () =>
      this.#gate(async () => {
        for (let attempt = 1; ; attempt++) {
          const key = await this.#keyOf(address);
          try {
            await this.#store.putWrites(key, checkpointId, rows, replace);
            return;
          } catch (error) {
            if (!(error instanceof StoreConflict) || attempt >= COMMIT_ATTEMPTS) throw error;
            this.#forgetKey(address);
          }
        }
      }),
    );
  }

  /** Tell the run which messages history now shows, as history will return them. */
  #announce(
    sink: HistorySink,
    threadId: string,
    rows: readonly PlannedRow[],
    marks: readonly { seq: number; message: BaseMessage }[],
    shown: ReadonlySet<number>,
    facts: ReadonlyMap<number, HistoryFacts>,
    runId: string | null,
    at: string,
  ): void {
    const entries = [...rows.map((row) => ({ seq: row.seq, message: row.loaded })), ...marks].filter((entry) => shown.has(entry.seq) && facts.has(entry.seq));
    entries.sort((a, b) => a.seq - b.seq);
    const messages: StoredMessage[] = entries.map(({ seq, message }) => {
      const { row } = projectMessage(message, runId, at);
      return {
        threadId,
        seq,
        id: row.id,
        type: row.type,
        content: row.content,
        additionalKwargs: row.additionalKwargs,
        responseMetadata: row.responseMetadata,
        visibility: row.visibility,
        runId: row.runId,
        createdAt: row.createdAt,
      };
    });
    sink.onStored?.(messages);
  }

  // ---------- keys, values, queues ----------

  async #keyOf(address: Address): Promise<number> {
    const name = addressName(address);
    const known = this.#keys.get(name);
    if (known !== undefined) return known;
    const key = await this.#store.key(address.threadId, address.checkpointNs, true);
    if (key === undefined) throw new Error(`could not make a key for thread ${address.threadId}`);
    this.#remember(address, key);
    return key;
  }

  #remember(address: Address, key: number): void {
    const name = addressName(address);
    const known = this.#keys.get(name);
    if (known !== undefined && known !== key) this.#memory.forget(known);
    this.#keys.delete(name);
    this.#keys.set(name, key);
    if (this.#keys.size > MAX_KEYS) this.#keys.delete(this.#keys.keys().next().value!);
  }

  #forgetKey(address: Address): void {
    const name = addressName(address);
    const key = this.#keys.get(name);
    this.#keys.delete(name);
    if (key !== undefined) this.#memory.forget(key);
  }

  #keepValue(key: number, hash: string, row: { type: string; value: Uint8Array }): void {
    const name = valueKey(key, hash);
    this.#values.delete(name);
    this.#values.set(name, { type: row.type, value: row.value });
    if (this.#values.size > MAX_VALUES) this.#values.delete(this.#values.keys().next().value!);
  }

}

/** The order live execution applies a superstep's writes in (LangGraph's writesSortKey). */
function byWritesSortKey(a: StoredWrite, b: StoredWrite): number {
  return compareWritesSortKeys(writesSortKey(a.taskPath, a.taskId, a.idx), writesSortKey(b.taskPath, b.taskId, b.idx));
}

function addressOf(config: RunnableConfig): Address | undefined {
  const threadId: unknown = config.configurable?.thread_id;
  // LangGraph's savers default only a missing namespace; a null one matches nothing.
  const checkpointNs: unknown = config.configurable?.checkpoint_ns === undefined ? '' : config.configurable.checkpoint_ns;
  const checkpointId: unknown = config.configurable?.checkpoint_id;
  if (typeof threadId !== 'string' || threadId === '' || typeof checkpointNs !== 'string') return undefined;
  return { threadId, checkpointNs, checkpointId: typeof checkpointId === 'string' && checkpointId !== '' ? checkpointId : undefined };
}

/** A thread id may hold any character, so the name is a JSON pair, not a joined string. */
function addressName(address: Pick<Address, 'threadId' | 'checkpointNs'>): string {
  return JSON.stringify([address.threadId, address.checkpointNs]);
}

function valueKey(key: number, hash: string): string {
  return `${key}\u0000${hash}`;
}

function historySinkOf(config: RunnableConfig): HistorySink | undefined {
  const sink = config.configurable?.[HISTORY_SINK] as HistorySink | undefined;
  return typeof sink === 'object' && sink !== null && typeof sink.now === 'function' ? sink : undefined;
}


/** JSON containment, as PostgreSQL's `@>` on metadata (LangGraph's PostgresSaver filters so). */
function contains(actual: unknown, expected: unknown): boolean {
  if (expected === null || typeof expected !== 'object') return actual === expected;
  if (Array.isArray(expected)) return Array.isArray(actual) && expected.every((item) => actual.some((candidate) => contains(candidate, item)));
  if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return false;
  return Object.entries(expected as Record<string, unknown>).every(([key, value]) => contains((actual as Record<string, unknown>)[key], value));
}
