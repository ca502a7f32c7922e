/**
 * The thread's append-only message log, shared by vigil's SQLite and PostgreSQL savers
 * before the thread store (migration 25) took its place; kept to read and write that format
 * (legacy/sqlite-saver.ts, legacy/postgres-saver.ts, for the conversion and its tests).
 *
 * Why: LangGraph's savers store a channel's whole value with each checkpoint (SQLite:
 * every checkpoint; PostgreSQL: every new channel version), so a turn on a long thread
 * re-serialises and re-stores every message, several times. Here each distinct message
 * version is written once, as one row of `checkpoint_messages` with a per-(thread,
 * namespace) sequence number, and a checkpoint stores, in place of a message list, a
 * reference: the list's sequence numbers as ranges (`[lo, hi, lo, hi, …]`). An append-only
 * thread is one range however long it gets; a removal splits a range, a replacement by id
 * adds the new version's number (an edit never rewrites a row, so an older checkpoint
 * still rebuilds its own list: time travel works).
 *
 * Why a sibling of `thread_messages` and not that table: the projection is the app's view
 * (one row per message id, visibility, run, preview, written in the app's transactions,
 * only for threads people own), while the checkpoint log must hold every version of a
 * message, per namespace (subgraphs), for any thread id LangGraph is given.
 *
 * What stays in memory, per recent thread: the loaded message for each sequence number,
 * and which message instances are which numbers. A put then serialises only the messages
 * it has not seen (the turn's new ones), and a read deserialises only the rows it does
 * not hold. Before using memory, one indexed lookup checks that the oldest row it knows
 * still holds the same message (a deleted thread, or one emptied behind our back, is a
 * miss and memory is dropped). Rows are never updated, so a known row is the row.
 *
 * Only lists of LangChain messages that all carry a string id are logged; any other
 * value is stored by the saver as before. Like the checkpoint cache, this treats loaded
 * messages as immutable (LangGraph's reducer builds new lists and never edits a message
 * in place).
 */
import { BaseMessage, BaseMessageChunk } from '@langchain/core/messages';
import type { SerializerProtocol } from '@langchain/langgraph-checkpoint';
import { compactMessageRow, expandMessageRow } from './message-log-codec.js';
import { expand, rangesOf, toRanges } from '../message-ranges.js';
import { SerialByKey } from '../serial-by-key.js';
import { referenceValue } from '../stored-reference.js';

/** The key of the reference object a checkpoint stores in place of a logged list. */
export const MESSAGE_LOG_REF = 'vigil:message-log';
/** The key of the reference a pending write stores in place of one logged message. */
export const MESSAGE_LOG_ONE = 'vigil:message-log-one';

export interface LoggedRow {
  seq: number;
  messageId: string;
  type: string;
  value: Uint8Array;
}

export interface NewLogRow {
  messageId: string;
  type: string;
  value: Uint8Array;
}

/** The few statements the log needs, per backend. */
export interface MessageLogStore {
  /** Rows of the thread's log whose seq falls in the ranges (`[lo, hi, …]`, inclusive). */
  read(threadId: string, checkpointNs: string, ranges: readonly number[]): Promise<LoggedRow[]>;
  /** The newest row for each of these message ids. */
  latest(threadId: string, checkpointNs: string, messageIds: readonly string[]): Promise<LoggedRow[]>;
  /** Appends the rows in order and returns their seqs. */
  append(threadId: string, checkpointNs: string, rows: readonly NewLogRow[]): Promise<number[]>;
  /**
   * latest and append at once, where a backend can do it in one round trip: each row's
   * seq, the stored one where the newest version of its message has these bytes, else a
   * new one. Rows have distinct message ids.
   */
  appendMissing?(threadId: string, checkpointNs: string, rows: readonly NewLogRow[]): Promise<number[]>;
  /** The message id stored at `seq`, if the row exists. */
  messageIdAt(threadId: string, checkpointNs: string, seq: number): Promise<string | undefined>;
}

export interface MessageLogLimits {
  /** Threads (and namespaces) whose messages stay loaded. */
  maxThreads: number;
  /** Loaded messages kept over all threads; the least recently used threads go first. */
  maxMessages: number;
}

const DEFAULT_LIMITS: MessageLogLimits = { maxThreads: 256, maxMessages: 200_000 };

interface ThreadLog {
  readonly bySeq: Map<number, BaseMessage>;
  readonly seqOf: WeakMap<object, number>;
  /** The oldest row this process knows, checked before memory is trusted. */
  anchor: { seq: number; messageId: string } | undefined;
  /**
   * The list last written or read, as it was (a copy), and its seqs: the next put of
   * the thread carries the same messages plus the new ones, so its known prefix is
   * matched by identity (a pointer compare per message) instead of a lookup per message.
   */
  last: { list: readonly unknown[]; seqs: readonly number[] } | undefined;
  /** When memory was last found to describe the stored log (performance.now()). */
  checkedAt?: number;
}

/** How long a check of memory is trusted by writes (see #threadLog). */
const WRITE_TRUST_MS = 5_000;

export class MessageLog {
  readonly #store: MessageLogStore;
  readonly #serde: SerializerProtocol;
  readonly #limits: MessageLogLimits;
  /** Insertion order is recency. */
  readonly #threads = new Map<string, ThreadLog>();
  #messages = 0;
  /** One log operation per thread at a time (seq allocation, memory updates). */
  readonly #serial = new SerialByKey();

  constructor(store: MessageLogStore, serde: SerializerProtocol, limits: Partial<MessageLogLimits> = {}) {
    this.#store = store;
    this.#serde = serde;
    this.#limits = { ...DEFAULT_LIMITS, ...limits };
  }

  /**
   * The checkpoint's channel values with each loggable message list written to the log and
   * replaced by its reference; also a list one level down, in a plain object (the graph's
   * input, `{ messages: [...] }`, which the input checkpoint keeps in `__start__`: a second
   * copy of the person's message otherwise).
   */
  async toStored(threadId: string, checkpointNs: string, values: Record<string, unknown>, channels?: Iterable<string>): Promise<Record<string, unknown>> {
    const names = channels === undefined ? Object.keys(values) : [...channels].filter((name) => name in values);
    const lists = names.filter((name) => isNonEmptyList(values[name]));
    const records = names.filter((name) => isPlainRecord(values[name]) && Object.values(values[name]).some(isNonEmptyList));
    if (lists.length === 0 && records.length === 0) return values;
    return this.#serial.run(key(threadId, checkpointNs), async () => {
      const log = await this.#threadLog(threadId, checkpointNs, 'write');
      const refOf = async (list: unknown[]) => {
        const seqs = await this.#write(threadId, checkpointNs, log, list);
        return seqs === undefined ? list : { [MESSAGE_LOG_REF]: toRanges(seqs) };
      };
      const stored = { ...values };
      // Records first: the thread's own list is then the one memory last saw (knownPrefix).
      for (const name of records) {
        const record = { ...(values[name] as Record<string, unknown>) };
        for (const [field, value] of Object.entries(record)) if (isNonEmptyList(value)) record[field] = await refOf(value);
        stored[name] = record;
      }
      for (const name of lists) stored[name] = await refOf(values[name] as unknown[]);
      return stored;
    });
  }

  /** The channel values with every log reference replaced by the list it stands for (one level down too, see toStored). */
  async fromStored(threadId: string, checkpointNs: string, values: Record<string, unknown>, options: { fresh?: boolean } = {}): Promise<Record<string, unknown>> {
    const refs = Object.keys(values).filter((name) => rangesOf(values[name]) !== undefined);
    const records = Object.keys(values).filter((name) => isPlainRecord(values[name]) && Object.values(values[name]).some((value) => rangesOf(value) !== undefined));
    if (refs.length === 0 && records.length === 0) return values;
    return this.#serial.run(key(threadId, checkpointNs), async () => {
      // Fresh: every message from its row, nothing from or into memory (checks of what is stored).
      const log = options.fresh === true ? emptyLog() : await this.#threadLog(threadId, checkpointNs);
      const restored = { ...values };
      // Records first, as in toStored.
      for (const name of records) {
        const record = { ...(values[name] as Record<string, unknown>) };
        for (const [field, value] of Object.entries(record)) {
          const ranges = rangesOf(value);
          if (ranges !== undefined) record[field] = await this.#read(threadId, checkpointNs, log, ranges);
        }
        restored[name] = record;
      }
      for (const name of refs) restored[name] = await this.#read(threadId, checkpointNs, log, rangesOf(values[name])!);
      return restored;
    });
  }

  /**
   * Pending writes' values (a node's output, the run's input) with each message, or list
   * of messages, written to the log and replaced by its reference: the message the
   * checkpoint after them holds is then the same logged row, not a second copy.
   */
  async toStoredWrites(threadId: string, checkpointNs: string, values: readonly unknown[]): Promise<unknown[]> {
    // A chunk (a streamed reply) is left in the write as it is: the channel's reducer
    // turns it into a new, non-chunk message, so logging it would add a row no checkpoint
    // refers to, between the rows the checkpoints do refer to.
    const writable = (value: unknown) => isLoggable(value) && !BaseMessageChunk.isInstance(value);
    const kindOf = (value: unknown) => (writable(value) ? 'one' : Array.isArray(value) && value.length > 0 && value.every(writable) ? 'list' : 'other');
    const kinds = values.map(kindOf);
    if (kinds.every((kind) => kind === 'other')) return [...values];
    return this.#serial.run(key(threadId, checkpointNs), async () => {
      const log = await this.#threadLog(threadId, checkpointNs, 'write');
      const stored: unknown[] = [];
      for (const [index, value] of values.entries()) {
        if (kinds[index] === 'one') {
          const [seq] = (await this.#write(threadId, checkpointNs, log, [value]))!;
          stored.push({ [MESSAGE_LOG_ONE]: seq });
        } else if (kinds[index] === 'list') {
          stored.push({ [MESSAGE_LOG_REF]: toRanges((await this.#write(threadId, checkpointNs, log, value as unknown[]))!) });
        } else stored.push(value);
      }
      return stored;
    });
  }

  /** The inverse of toStoredWrites. */
  async fromStoredWrites(threadId: string, checkpointNs: string, values: readonly unknown[], options: { fresh?: boolean } = {}): Promise<unknown[]> {
    if (!values.some((value) => rangesOf(value) !== undefined || oneOf(value) !== undefined)) return [...values];
    return this.#serial.run(key(threadId, checkpointNs), async () => {
      const log = options.fresh === true ? emptyLog() : await this.#threadLog(threadId, checkpointNs);
      const restored: unknown[] = [];
      for (const value of values) {
        const ranges = rangesOf(value);
        const one = oneOf(value);
        if (ranges !== undefined) restored.push(await this.#read(threadId, checkpointNs, log, ranges));
        else if (one !== undefined) restored.push((await this.#read(threadId, checkpointNs, log, [one, one]))[0]);
        else restored.push(value);
      }
      return restored;
    });
  }

  /**
   * The saver read the thread's latest checkpoint and found it is the one it holds (its
   * cache's probe): the log is as memory knows it, since it changes only with checkpoints.
   */
  vouch(threadId: string, checkpointNs: string): void {
    const log = this.#threads.get(key(threadId, checkpointNs));
    if (log !== undefined) log.checkedAt = performance.now();
  }

  /** Drops what memory holds for a thread (its rows are being deleted). */
  forgetThread(threadId: string): void {
    for (const [name, log] of this.#threads) {
      if (JSON.parse(name)[0] === threadId) {
        this.#messages -= log.bySeq.size;
        this.#threads.delete(name);
      }
    }
  }

  /** The list's seqs, writing what the log lacks; undefined when the list is not all messages with ids (stored as it is). */
  async #write(threadId: string, checkpointNs: string, log: ThreadLog, values: readonly unknown[]): Promise<number[] | undefined> {
    const seqs = new Array<number>(values.length);
    const unknown: number[] = [];
    const prefix = knownPrefix(log.last, values);
    for (let index = 0; index < prefix; index++) seqs[index] = log.last!.seqs[index]!;
    // One pass: a known instance is a logged message; only the others are examined.
    for (let index = prefix; index < values.length; index++) {
      const value = values[index];
      const seq = typeof value === 'object' && value !== null ? log.seqOf.get(value) : undefined;
      if (seq !== undefined) seqs[index] = seq;
      else if (isLoggable(value)) unknown.push(index);
      else return undefined;
    }
    if (unknown.length === 0) {
      log.last = { list: values.slice(), seqs };
      return seqs;
    }
    const list = values as readonly BaseMessage[];
    // Only what this process has not seen is serialised: a turn's new messages. Stored in
    // the form a load gives back (serialised, loaded, serialised again): a message fresh
    // from a node still carries `undefined` fields that the first load drops, and without
    // this the loaded copy of the same message (which the next turn's state holds) would
    // not match its row and be written a second time.
    const dumped = await Promise.all(unknown.map((index) => this.#canonical(list[index]!)));
    const ids = unknown.map((index) => list[index]!.id as string);
    if (this.#store.appendMissing !== undefined && new Set(ids).size === ids.length) {
      const found = await this.#store.appendMissing(
        threadId,
        checkpointNs,
        unknown.map((_, position) => ({ messageId: ids[position]!, type: dumped[position]![0], value: dumped[position]![1] })),
      );
      unknown.forEach((index, position) => {
        seqs[index] = found[position]!;
      });
      return this.#learn(log, list, values, seqs, unknown, dumped, ids);
    }
    const existing = new Map((await this.#store.latest(threadId, checkpointNs, [...new Set(ids)])).map((row) => [row.messageId, row]));
    const toAppend: { index: number; row: NewLogRow }[] = [];
    unknown.forEach((index, position) => {
      const [type, bytes] = dumped[position]!;
      const stored = existing.get(ids[position]!);
      // The same version of the message is already logged (a copy made elsewhere, or
      // memory lost to eviction): point at it rather than write it again.
      if (stored !== undefined && stored.type === type && sameBytes(stored.value, bytes)) seqs[index] = stored.seq;
      else toAppend.push({ index, row: { messageId: ids[position]!, type, value: bytes } });
    });
    if (toAppend.length > 0) {
      const appended = await this.#store.append(threadId, checkpointNs, toAppend.map((entry) => entry.row));
      toAppend.forEach((entry, position) => {
        seqs[entry.index] = appended[position]!;
      });
    }
    return this.#learn(log, list, values, seqs, unknown, dumped, ids);
  }

  /** Memory after a write: what each newly logged message is, and the list as written. */
  #learn(log: ThreadLog, list: readonly BaseMessage[], values: readonly unknown[], seqs: number[], unknown: readonly number[], dumped: readonly [string, Uint8Array, BaseMessage][], ids: readonly string[]): number[] {
    // Memory holds what a read would return (a loaded copy), never the caller's instance.
    for (const [position, index] of unknown.entries()) {
      const seq = seqs[index]!;
      log.seqOf.set(list[index]!, seq);
      if (!log.bySeq.has(seq)) this.#remember(log, seq, dumped[position]![2], ids[position]!);
    }
    log.last = { list: values.slice(), seqs };
    this.#trim();
    return seqs;
  }

  async #read(threadId: string, checkpointNs: string, log: ThreadLog, ranges: readonly number[]): Promise<BaseMessage[]> {
    const seqs = expand(ranges);
    const missing = seqs.filter((seq) => !log.bySeq.has(seq));
    if (missing.length > 0) {
      const rows = await this.#store.read(threadId, checkpointNs, toRanges(missing));
      const loaded = await Promise.all(
        rows.map(async (row) => {
          const { type, value } = expandMessageRow(row.type, row.value, row.messageId);
          return [row, (await this.#serde.loadsTyped(type, value)) as BaseMessage] as const;
        }),
      );
      for (const [row, message] of loaded) this.#remember(log, row.seq, message, row.messageId);
    }
    const list = seqs.map((seq) => {
      const message = log.bySeq.get(seq);
      if (message === undefined) throw new Error(`message log of thread ${threadId} has no row ${seq}`);
      return message;
    });
    log.last = { list: list.slice(), seqs };
    this.#trim();
    return list;
  }

  /** The message's stored form (its row's type and value) and the message a read of it returns. */
  async #canonical(message: BaseMessage): Promise<[string, Uint8Array, BaseMessage]> {
    const [type, first] = await this.#serde.dumpsTyped(message);
    const loaded = (await this.#serde.loadsTyped(type, first)) as BaseMessage;
    const [, again] = await this.#serde.dumpsTyped(loaded);
    const row = compactMessageRow(type, typeof again === 'string' ? new TextEncoder().encode(again) : new Uint8Array(again), message.id as string);
    return [row.type, row.value, loaded];
  }

  #remember(log: ThreadLog, seq: number, message: BaseMessage, messageId: string): void {
    if (!log.bySeq.has(seq)) this.#messages++;
    log.bySeq.set(seq, message);
    log.seqOf.set(message, seq);
    if (log.anchor === undefined || seq < log.anchor.seq) log.anchor = { seq, messageId };
  }

  /** The thread's memory, after checking it still describes the stored log. */
  async #threadLog(threadId: string, checkpointNs: string, use: 'read' | 'write' = 'read'): Promise<ThreadLog> {
    const name = key(threadId, checkpointNs);
    let log = this.#threads.get(name);
    if (log !== undefined) {
      this.#threads.delete(name);
      const anchor = log.anchor;
      // A write trusts a check made moments ago. A run's writes follow LangGraph's read of
      // the thread at the run's start (a check here, or a cache hit that the saver's probe
      // confirmed: see vouch), under the thread's lock; on PostgreSQL each check is a round
      // trip, and a turn made four. Reads always check: a read is how a process learns that
      // a thread was deleted and started again elsewhere.
      const trusted = use === 'write' && log.checkedAt !== undefined && performance.now() - log.checkedAt < WRITE_TRUST_MS;
      if (!trusted && anchor !== undefined && (await this.#store.messageIdAt(threadId, checkpointNs, anchor.seq)) !== anchor.messageId) {
        this.#messages -= log.bySeq.size;
        log = undefined;
      } else if (!trusted) log.checkedAt = performance.now();
    }
    log ??= emptyLog();
    // maxThreads 0: no memory at all (each call starts empty), for reference readers.
    if (this.#limits.maxThreads > 0) this.#threads.set(name, log);
    return log;
  }

  #trim(): void {
    for (const [name, log] of this.#threads) {
      if (this.#threads.size <= this.#limits.maxThreads && this.#messages <= this.#limits.maxMessages) break;
      // Never the thread just used (the last one), so a single huge thread still works.
      if (this.#threads.size === 1) break;
      this.#threads.delete(name);
      this.#messages -= log.bySeq.size;
    }
  }

}

function emptyLog(): ThreadLog {
  return { bySeq: new Map(), seqOf: new WeakMap(), anchor: undefined, last: undefined };
}

/**
 * How many leading elements of `values` are the very instances of the last list (whose
 * seqs are then known). The longest such prefix: a list read back holds a copy of the
 * previous turn's reply where the list written held the node's own instance.
 */
function knownPrefix(last: ThreadLog['last'], values: readonly unknown[]): number {
  if (last === undefined) return 0;
  const list = last.list;
  const length = Math.min(list.length, values.length);
  let index = 0;
  while (index < length && values[index] === list[index]) index++;
  return index;
}

function key(threadId: string, checkpointNs: string): string {
  return JSON.stringify([threadId, checkpointNs]);
}

function isNonEmptyList(value: unknown): value is unknown[] {
  return Array.isArray(value) && value.length > 0;
}

function isPlainRecord(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return (prototype === Object.prototype || prototype === null) && rangesOf(value) === undefined && oneOf(value) === undefined;
}

/** A LangChain message with a string id. */
function isLoggable(value: unknown): value is BaseMessage {
  return BaseMessage.isInstance(value) && typeof value.id === 'string' && value.id !== '';
}


/** The seq of a stored single-message reference, or undefined for any other value. */
function oneOf(value: unknown): number | undefined {
  const seq = referenceValue(value, MESSAGE_LOG_ONE);
  return Number.isSafeInteger(seq) ? (seq as number) : undefined;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && Buffer.compare(a, b) === 0;
}
