/**
 * What the saver keeps in memory of recent threads' message rows, so that a turn on a long
 * thread serialises only its new messages and deserialises nothing.
 *
 * Per thread key: the loaded message for each row number it has seen, which message
 * instances are which rows, whether each row is shown in history, and the list last written
 * or read (the next write of the thread carries the same messages plus the new ones, so its
 * known prefix is matched by identity, a pointer compare per message). Rows are never
 * updated in what they hold, and keys are never reused (a deleted thread made again is a
 * new key), so what memory holds of a key is true for as long as the key exists: nothing has
 * to be checked against the database before it is used.
 *
 * Like the checkpoint values it stands in for, loaded messages are treated as immutable
 * (LangGraph's reducer builds new lists and never edits a message in place).
 */
import { BaseMessage } from '@langchain/core/messages';
import type { SerializerProtocol } from '@langchain/langgraph-checkpoint';
import { decodeMessageRow, encodeMessageRow } from './message-row-codec.js';
import { MESSAGE_LIST_REF, expand, rangesOf, toRanges } from './message-ranges.js';
import type { NewMessageRow, StoredMessageRow } from './checkpoint-store.js';

export interface MessageMemoryLimits {
  /** Thread keys whose messages stay loaded. */
  maxThreads: number;
  /** Loaded messages kept over all keys; the least recently used keys go first. */
  maxMessages: number;
}

const DEFAULT_LIMITS: MessageMemoryLimits = { maxThreads: 256, maxMessages: 200_000 };

interface KeyMemory {
  readonly bySeq: Map<number, BaseMessage>;
  /**
   * What history makes of each known row: shown, or hidden for good (a later version of a
   * message history shows, or a row the database declined to show). A known row in neither
   * set was written outside the history channel and may be shown once it appears there.
   */
  readonly shown: Set<number>;
  readonly hidden: Set<number>;
  /** Known rows in neither set (rare: written outside the history channel): checked when a write's history list holds them. */
  readonly undecided: Set<number>;
  /** The history channel's list last written or read, its row numbers, their ranges as stored, and the highest. */
  last: { list: readonly unknown[]; seqs: readonly number[]; ranges: readonly number[]; top: number } | undefined;
  /** The number the next new row takes, once known. */
  nextSeq: number | undefined;
}

/** A new row a write plans, with the message a read of it returns. */
export interface PlannedRow extends NewMessageRow {
  /** The instance the write was given. */
  readonly original: BaseMessage;
  readonly loaded: BaseMessage;
}

export interface PlannedValues {
  /** The channel values with each message list replaced by its reference. */
  values: Record<string, unknown>;
  rows: PlannedRow[];
  /** Rows of the history channel that history does not show yet (written first elsewhere). */
  marks: { seq: number; message: BaseMessage }[];
  /** The highest row number the values refer to (0 for none). */
  lastSeq: number;
  /** The history channel's list as written, for memory once the write is committed. */
  last: KeyMemory['last'];
}

export class ThreadMessageMemory {
  readonly #serde: SerializerProtocol;
  readonly #limits: MessageMemoryLimits;
  /**
   * Which row each message instance is, by key, for as long as the instance lives: apart from
   * the per-key memory, so that a key evicted between a run's read and its writes (a busy
   * server touching more threads than memory keeps) still knows the messages of the state the
   * run holds, and writes only what is new.
   */
  readonly #rows = new WeakMap<object, { key: number; seq: number }>();
  /** Insertion order is recency. */
  readonly #keys = new Map<number, KeyMemory>();
  #messages = 0;

  constructor(serde: SerializerProtocol, limits: Partial<MessageMemoryLimits> = {}) {
    this.#serde = serde;
    this.#limits = { ...DEFAULT_LIMITS, ...limits };
  }

  /** The number of the next row of the key, when memory knows it. */
  nextSeq(key: number): number | undefined {
    return this.#keys.get(key)?.nextSeq;
  }

  /** The highest row number of the key, as the database just said (a read, a failed write). */
  sawMaxSeq(key: number, maxSeq: number): void {
    const memory = this.#memory(key);
    memory.nextSeq = maxSeq + 1;
  }

  /**
   * The rows a write of these channel values needs, numbered from `firstSeq` on: every
   * message memory does not know as a row of this key. `historyChannel`: the channel whose
   * messages the thread's history shows.
   */
  async plan(key: number, values: Record<string, unknown>, firstSeq: number, historyChannel: string | undefined): Promise<PlannedValues> {
    const memory = this.#memory(key);
    const stored: Record<string, unknown> = { ...values };
    const rows: PlannedRow[] = [];
    const marks: PlannedValues['marks'] = [];
    /** New instances numbered by this plan (one may sit in two channels). */
    const planned = new Map<object, number>();
    let next = firstSeq;
    let lastSeq = 0;
    let last: KeyMemory['last'];
    // The history channel first: the list memory last saw is the thread's own, so its prefix matches.
    const names = Object.keys(values).sort((a, b) => Number(b === historyChannel) - Number(a === historyChannel));
    for (const name of names) {
      const value = values[name];
      if (!Array.isArray(value) || value.length === 0) continue;
      // The known prefix is messages already; only the rest is looked at (a long thread's list is not walked).
      const prefix = knownPrefix(memory.last, value);
      if (!isMessageList(value, prefix)) continue;
      const list = value as BaseMessage[];
      const shown = name === historyChannel;
      const fresh: number[] = [];
      for (let index = prefix; index < list.length; index++) {
        const message = list[index]!;
        const numbered = this.#rows.get(message);
        const known = (numbered?.key === key ? numbered.seq : undefined) ?? planned.get(message);
        if (known !== undefined) {
          fresh.push(known);
          continue;
        }
        // Memory holds the message written itself: it serialises as its row reads back (JSON drops
        // what a fresh read would lack), and loading a copy cost more than the rest of the write
        // (LangChain's reviver builds a message anew: ~120 µs a message).
        const [serializerType, dumped] = await this.#serde.dumpsTyped(message);
        const row = encodeMessageRow(serializerType, typeof dumped === 'string' ? new TextEncoder().encode(dumped) : dumped, message.id as string);
        const seq = next++;
        rows.push({ seq, messageId: message.id as string, type: row.type, body: row.body, shown, original: message, loaded: message });
        planned.set(message, seq);
        fresh.push(seq);
      }
      // The list the memory last saw, extended (a turn's list is the last one and its new
      // messages): its numbers and ranges are taken whole, and only the new part is walked.
      const extends_ = memory.last !== undefined && prefix === memory.last.seqs.length;
      const seqs = extends_ ? memory.last!.seqs.concat(fresh) : [...(memory.last?.seqs.slice(0, prefix) ?? []), ...fresh];
      const ranges = extends_ ? extendRanges(memory.last!.ranges, fresh) : toRanges(seqs);
      let top = extends_ ? memory.last!.top : 0;
      for (const seq of extends_ ? fresh : seqs) if (seq > top) top = seq;
      if (shown) {
        // Known rows history has not decided on yet (few, usually none) that this list holds.
        if (memory.undecided.size > 0) {
          const inList = new Set(seqs);
          for (const seq of memory.undecided) if (inList.has(seq)) marks.push({ seq, message: memory.bySeq.get(seq)! });
        }
        last = { list: list.slice(), seqs, ranges, top };
      }
      if (top > lastSeq) lastSeq = top;
      stored[name] = { [MESSAGE_LIST_REF]: ranges };
    }
    return { values: stored, rows, marks, lastSeq, last };
  }

  /**
   * The rows for messages to add to the thread's history on their own (a run's input, before
   * any checkpoint holds it): every one memory does not know as a row of this key.
   */
  async planMessages(key: number, messages: readonly BaseMessage[], firstSeq: number): Promise<PlannedValues> {
    const rows: PlannedRow[] = [];
    let next = firstSeq;
    let lastSeq = 0;
    for (const message of messages) {
      const numbered = this.#rows.get(message);
      if (numbered?.key === key) {
        lastSeq = Math.max(lastSeq, numbered.seq);
        continue;
      }
      const [serializerType, dumped] = await this.#serde.dumpsTyped(message);
      const row = encodeMessageRow(serializerType, typeof dumped === 'string' ? new TextEncoder().encode(dumped) : dumped, message.id as string);
      const seq = next++;
      rows.push({ seq, messageId: message.id as string, type: row.type, body: row.body, shown: true, original: message, loaded: message });
      lastSeq = seq;
    }
    return { values: {}, rows, marks: [], lastSeq, last: undefined };
  }

  /**
   * A planned write was committed: memory learns its rows, and what history made of the
   * rows and marks it decided on (`shownSeqs` are shown; the other candidates are hidden).
   */
  learn(key: number, planned: Pick<PlannedValues, 'rows' | 'marks' | 'last'>, shownSeqs: ReadonlySet<number>): void {
    const memory = this.#memory(key);
    for (const row of planned.rows) {
      this.#remember(key, memory, row.seq, row.loaded, row.shown ? (shownSeqs.has(row.seq) ? 'shown' : 'hidden') : undefined);
      this.#rows.set(row.original, { key, seq: row.seq });
      memory.nextSeq = Math.max(memory.nextSeq ?? 0, row.seq + 1);
    }
    if (planned.last !== undefined) memory.last = planned.last;
    for (const mark of planned.marks) {
      memory.undecided.delete(mark.seq);
      (shownSeqs.has(mark.seq) ? memory.shown : memory.hidden).add(mark.seq);
    }
    this.#trim();
  }

  /** A write failed: the key's next row number is asked of the database again. */
  forgetNextSeq(key: number): void {
    const memory = this.#keys.get(key);
    if (memory !== undefined) memory.nextSeq = undefined;
  }

  /**
   * The channel values with every message-list reference replaced by its messages; rows
   * memory lacks come from `fetch`. `fresh`: every message from its row, nothing from or
   * into memory (checks of what is stored).
   */
  async restore(
    key: number,
    values: Record<string, unknown>,
    fetch: (ranges: number[]) => Promise<StoredMessageRow[]>,
    options: { fresh?: boolean; historyChannel?: string | undefined } = {},
  ): Promise<Record<string, unknown>> {
    const names = Object.keys(values).filter((name) => rangesOf(values[name]) !== undefined);
    if (names.length === 0) return values;
    const memory = options.fresh === true ? emptyMemory() : this.#memory(key);
    const restored = { ...values };
    names.sort((a, b) => Number(a === options.historyChannel) - Number(b === options.historyChannel));
    for (const name of names) {
      const ranges = rangesOf(values[name])!;
      // The list this process last wrote or read for the thread (a run reading the checkpoint its
      // previous turn stored): the same messages, without a lookup per message.
      if (options.fresh !== true && memory.last !== undefined && sameNumbers(memory.last.ranges, ranges)) {
        restored[name] = memory.last.list.slice();
        continue;
      }
      const seqs = expand(ranges);
      const missing = seqs.filter((seq) => !memory.bySeq.has(seq));
      if (missing.length > 0) {
        const rows = await fetch(toRanges([...new Set(missing)].sort((a, b) => a - b)));
        for (const row of rows) {
          const { type, value } = decodeMessageRow(row.type, row.body, row.messageId);
          this.#remember(key, memory, row.seq, (await this.#serde.loadsTyped(type, value)) as BaseMessage, row.shown === true ? 'shown' : undefined);
        }
      }
      const list = seqs.map((seq) => {
        const message = memory.bySeq.get(seq);
        if (message === undefined) throw new Error(`thread key ${key} has no message row ${seq}`);
        return message;
      });
      if (name === options.historyChannel || memory.last === undefined) memory.last = { list: list.slice(), seqs, ranges, top: seqs.reduce((a, b) => (b > a ? b : a), 0) };
      restored[name] = list;
    }
    if (options.fresh !== true) this.#trim();
    return restored;
  }

  /** The messages of these rows (history pages): from memory where it has them, decoded otherwise (and not kept). */
  async messagesOf(key: number, rows: readonly StoredMessageRow[]): Promise<BaseMessage[]> {
    const memory = this.#keys.get(key);
    const messages: BaseMessage[] = [];
    for (const row of rows) {
      const known = memory?.bySeq.get(row.seq);
      if (known !== undefined) {
        messages.push(known);
        continue;
      }
      const { type, value } = decodeMessageRow(row.type, row.body, row.messageId);
      messages.push((await this.#serde.loadsTyped(type, value)) as BaseMessage);
    }
    return messages;
  }

  forget(key: number): void {
    const memory = this.#keys.get(key);
    if (memory === undefined) return;
    this.#messages -= memory.bySeq.size;
    this.#keys.delete(key);
  }

  #memory(key: number): KeyMemory {
    let memory = this.#keys.get(key);
    if (memory !== undefined) this.#keys.delete(key);
    memory ??= emptyMemory();
    // maxThreads 0: no memory at all (each call starts empty).
    if (this.#limits.maxThreads > 0) this.#keys.set(key, memory);
    return memory;
  }

  #remember(key: number, memory: KeyMemory, seq: number, message: BaseMessage, history: 'shown' | 'hidden' | undefined): void {
    if (!memory.bySeq.has(seq)) this.#messages++;
    memory.bySeq.set(seq, message);
    this.#rows.set(message, { key, seq });
    if (history !== undefined) {
      memory.undecided.delete(seq);
      (history === 'shown' ? memory.shown : memory.hidden).add(seq);
    } else if (!memory.shown.has(seq) && !memory.hidden.has(seq)) memory.undecided.add(seq);
    if (memory.nextSeq !== undefined && seq >= memory.nextSeq) memory.nextSeq = seq + 1;
  }

  #trim(): void {
    for (const [key, memory] of this.#keys) {
      if (this.#keys.size <= this.#limits.maxThreads && this.#messages <= this.#limits.maxMessages) break;
      // Never the key just used (the last one), so a single huge thread still works.
      if (this.#keys.size === 1) break;
      this.#keys.delete(key);
      this.#messages -= memory.bySeq.size;
    }
  }
}

function emptyMemory(): KeyMemory {
  return { bySeq: new Map(), shown: new Set(), hidden: new Set(), undecided: new Set(), last: undefined, nextSeq: undefined };
}

/** A list of LangChain messages that all carry a string id (stored as rows), its first `from` known to be. */
function isMessageList(list: readonly unknown[], from: number): boolean {
  for (let index = from; index < list.length; index++) {
    const item = list[index];
    if (!BaseMessage.isInstance(item) || typeof item.id !== 'string' || item.id === '') return false;
  }
  return true;
}

/**
 * How many leading elements of `values` are the very instances of the last list (whose
 * numbers are then known). The longest such prefix: a list read back holds a copy of the
 * previous turn's reply where the list written held the node's own instance.
 */
function knownPrefix(last: KeyMemory['last'], values: readonly unknown[]): number {
  if (last === undefined) return 0;
  const list = last.list;
  const length = Math.min(list.length, values.length);
  let index = 0;
  while (index < length && values[index] === list[index]) index++;
  return index;
}

function sameNumbers(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let index = 0; index < a.length; index++) if (a[index] !== b[index]) return false;
  return true;
}

/** `ranges` with `seqs` appended, as toRanges would give the whole list's. */
function extendRanges(ranges: readonly number[], seqs: readonly number[]): number[] {
  const extended = [...ranges];
  for (const seq of seqs) {
    const last = extended.length - 1;
    if (last > 0 && extended[last] === seq - 1) extended[last] = seq;
    else extended.push(seq, seq);
  }
  return extended;
}
