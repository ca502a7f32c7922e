/**
 * Values for the checkpoint cache: what a saver's read would return for a value it just
 * wrote, without re-reading (and re-deserialising) the whole message list; copies that
 * callers may mutate without touching the cache; and PostgreSQL's jsonb normal form.
 */
import { BaseMessage } from '@langchain/core/messages';
import { DeltaSnapshot, JsonPlusSerializer, type SerializerProtocol } from '@langchain/langgraph-checkpoint';

/**
 * Produces what `serde.loadsTyped(...serde.dumpsTyped(value))` returns for a value stored
 * inside a JSON document, reusing message instances that are themselves the product of
 * a load (one this codec did, or one a saver read and handed to {@link adopt}).
 *
 * Why this is exact: JsonPlusSerializer (de)serialises an array element by element (the
 * replacer and the reviver ignore the key, and an array is revived as the array of its
 * revived elements), so the round trip of an array is the array of its elements' round
 * trips; and the round trip of a loaded message is an equal message (loading is
 * idempotent; the contract tests check every message kind vigil stores). Reusing the
 * instance is then indistinguishable from a fresh load as long as nobody mutates it,
 * which holds for LangChain messages in practice (LangGraph's reducer only fills a
 * missing id, keeping `lc_kwargs` in step, which serialises to the same thing).
 *
 * With any other serializer (or for anything but arrays and delta snapshots) it does
 * the real round trip, so it is never wrong, only sometimes not faster.
 */
export class CheckpointValueCodec {
  readonly #serde: SerializerProtocol;
  readonly #reuse: boolean;
  /** Message instances this process loaded, and so knows to be their own round trip. */
  readonly #loaded = new WeakSet<object>();
  /**
   * The last list round-tripped, by its first element (a thread's list keeps its first
   * message), as it was (a copy) with its result: the next put of the thread carries the
   * same messages plus the new ones, so that prefix is matched by identity (a pointer
   * compare per element) instead of a lookup per element.
   */
  readonly #lastByHead = new WeakMap<object, { list: readonly unknown[]; result: readonly unknown[] }>();

  constructor(serde: SerializerProtocol) {
    this.#serde = serde;
    // Exactly LangGraph's serializer: a subclass could change how arrays round-trip.
    this.#reuse = Object.getPrototypeOf(serde) === JsonPlusSerializer.prototype;
  }

  /**
   * Whether a saver may build its cache entry from what it writes: only with LangGraph's
   * own serializer, whose element-by-element behaviour the reasoning above relies on
   * (with another, the cache fills from reads alone).
   */
  get derivesWrites(): boolean {
    return this.#reuse;
  }

  /**
   * The value as it would come back from a JSON document that embeds it. Everything is
   * serialised before this returns its promise (no await first), so the result reflects
   * the value at the moment of the call, as the saver's own serialisation does.
   */
  roundTrip(value: unknown): Promise<unknown> {
    if (this.#reuse && Array.isArray(value)) return this.#array(value);
    if (this.#reuse && value instanceof DeltaSnapshot && Array.isArray(value.value)) {
      return this.#array(value.value).then((revived) => new DeltaSnapshot(revived));
    }
    return this.#whole(value);
  }

  /**
   * The value a saver would return for one document holding `value` exactly (no reuse):
   * for small values (metadata, the checkpoint's bookkeeping) where a plain round trip is
   * cheap and sidesteps any question of equivalence.
   */
  async exact<T>(value: T): Promise<T> {
    const [type, bytes] = await this.#serde.dumpsTyped(value);
    return (await this.#serde.loadsTyped(type, bytes)) as T;
  }

  /** Record the messages of a value a saver loaded, so later round trips can reuse them. */
  adopt(value: unknown): void {
    const list = value instanceof DeltaSnapshot ? value.value : value;
    if (!Array.isArray(list)) return;
    for (const element of list) if (BaseMessage.isInstance(element)) this.#loaded.add(element);
  }

  #array(list: readonly unknown[]): Promise<unknown[]> {
    const result: unknown[] = new Array<unknown>(list.length);
    const unknownAt: number[] = [];
    const head = list[0];
    const last = typeof head === 'object' && head !== null ? this.#lastByHead.get(head) : undefined;
    // The longest prefix of the very same instances (the rest goes the usual way).
    let prefix = 0;
    if (last !== undefined) {
      const length = Math.min(last.list.length, list.length);
      while (prefix < length && list[prefix] === last.list[prefix]) prefix++;
    }
    for (let index = 0; index < prefix; index++) result[index] = last!.result[index];
    const remember = () => {
      if (typeof head === 'object' && head !== null) this.#lastByHead.set(head, { list: list.slice(), result: result.slice() });
    };
    for (let index = prefix; index < list.length; index++) {
      const element = list[index];
      if (typeof element === 'object' && element !== null && this.#loaded.has(element)) result[index] = element;
      else unknownAt.push(index);
    }
    if (unknownAt.length === 0) {
      remember();
      return Promise.resolve(result);
    }
    // One round trip for all the new elements: a fresh array of them serialises element
    // by element exactly as they would inside the whole list.
    const revived = this.#whole(unknownAt.map((index) => list[index]));
    const snapshot = list.slice(); // as it is now: the result reflects the list at the call
    return revived.then((values) => {
      const elements = values as unknown[];
      unknownAt.forEach((at, position) => {
        result[at] = elements[position];
      });
      this.adopt(elements);
      if (typeof head === 'object' && head !== null) this.#lastByHead.set(head, { list: snapshot, result: result.slice() });
      return result;
    });
  }

  /** The real round trip, wrapped in an array so a Uint8Array goes through JSON as it would inside a document. */
  #whole(value: unknown): Promise<unknown> {
    const dumped = this.#serde.dumpsTyped([value]);
    return dumped.then(([type, bytes]) => this.#serde.loadsTyped(type, bytes)).then((loaded) => (loaded as unknown[])[0]);
  }
}

/**
 * A copy a caller may mutate without changing the cached original: containers (arrays,
 * plain objects, maps, sets, dates, byte arrays, delta snapshots) are copied all the way
 * down; class instances (LangChain messages above all) are shared, as immutable.
 */
export function detach<T>(value: T): T {
  return detachValue(value) as T;
}

/** Prototypes of class instances detach shares (LangChain messages above all), learnt as they are met. */
const sharedPrototypes = new WeakSet<object>();

function detachValue(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    // A thread's message list: a pointer copy, with a shared instance told apart by its
    // prototype alone (the full check below per message was most of a long thread's read).
    const copy = value.slice();
    for (let index = 0; index < copy.length; index++) {
      const item: unknown = copy[index];
      if (typeof item === 'object' && item !== null && !sharedPrototypes.has(Object.getPrototypeOf(item) as object)) copy[index] = detachValue(item);
    }
    return copy;
  }
  const prototype: unknown = Object.getPrototypeOf(value);
  if (prototype === Object.prototype || prototype === null) {
    const copy: Record<string, unknown> = prototype === null ? (Object.create(null) as Record<string, unknown>) : {};
    for (const key of Object.keys(value)) {
      const item = detachValue((value as Record<string, unknown>)[key]);
      // A JSON "__proto__" key is an own property: keep it one, never a prototype change.
      if (key === '__proto__') Object.defineProperty(copy, key, { value: item, enumerable: true, writable: true, configurable: true });
      else copy[key] = item;
    }
    return copy;
  }
  if (value instanceof Map) return new Map([...value].map(([key, item]) => [key, detachValue(item)]));
  if (value instanceof Set) return new Set([...value].map(detachValue));
  if (value instanceof Date) return new Date(value.getTime());
  if (value instanceof DeltaSnapshot) return new DeltaSnapshot(detachValue(value.value));
  if (Buffer.isBuffer(value)) return Buffer.from(value);
  if (value instanceof Uint8Array) return new Uint8Array(value);
  if (value instanceof RegExp) return new RegExp(value.source, value.flags);
  if (prototype !== null && typeof prototype === 'object') sharedPrototypes.add(prototype);
  return value;
}

/**
 * What a jsonb column gives back for a value node-postgres wrote as JSON: the JSON
 * round trip (dropped undefined, dates as text), with object keys in jsonb's order
 * (shorter keys first, then by UTF-8 bytes), which is the order JSON.parse then keeps.
 */
export function asJsonb(value: unknown): unknown {
  const text = JSON.stringify(value);
  return text === undefined ? undefined : jsonbOrder(JSON.parse(text));
}

function jsonbOrder(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(jsonbOrder);
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record).map((key) => ({ key, bytes: Buffer.from(key, 'utf8') }));
  keys.sort((a, b) => a.bytes.length - b.bytes.length || Buffer.compare(a.bytes, b.bytes));
  const ordered: Record<string, unknown> = {};
  for (const { key } of keys) {
    const item = jsonbOrder(record[key]);
    if (key === '__proto__') Object.defineProperty(ordered, key, { value: item, enumerable: true, writable: true, configurable: true });
    else ordered[key] = item;
  }
  return ordered;
}
