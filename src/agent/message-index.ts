import { randomUUID } from 'node:crypto';
import { BaseMessageChunk, RemoveMessage, isBaseMessage, type BaseMessage } from '@langchain/core/messages';
import { messagesStateReducer } from '@langchain/langgraph';

/**
 * An append-only fast path for the `messages` channel's reducer, exact to
 * LangGraph's `messagesStateReducer` (which it falls back to for anything else).
 *
 * Why: `messagesStateReducer` coerces every message already in state and rebuilds an
 * id → position map of the whole list on every write, and LangGraph runs it on every
 * step (plus once more for each conditional edge's state read): on a 10,000-message
 * thread that was most of a turn's CPU. A turn's writes are nearly always new messages
 * appended at the end; for those the result is `left.concat(right)`, provided none of
 * the new ids is already in `left` and `left` holds only non-chunk messages with
 * distinct string ids (then `messagesStateReducer` would neither coerce, re-id nor
 * replace anything in it).
 *
 * Membership is answered in O(1) from a map id → position shared by a list and the
 * lists appended to it. Invariant: for every list registered with a map, and every
 * position i below that list's length, `map.get(list[i].id) === i`. Entries are only
 * ever added, never changed, so appending to one list never breaks another list
 * registered with the same map; a new message whose id the map already places
 * elsewhere (another branch appended it at another position) makes the result start a
 * map of its own, built when next needed. A list not registered (read from a
 * checkpoint) is indexed once, in one pass.
 */
interface Index {
  readonly positions: Map<string, number>;
  /** The list's length when registered: a list changed in place is indexed again. */
  readonly length: number;
}

const indexes = new WeakMap<readonly unknown[], Index>();
/**
 * The last list registered with an index, by its first message, as it was: a checkpoint
 * read hands LangGraph a copy of the list (the same messages, but for copies of the
 * newest ones, in a new array), which then takes over that index after checking it: the
 * same instances up to some point, and every message after it where the index says.
 */
const byFirstMessage = new WeakMap<object, { snapshot: readonly unknown[]; index: Index }>();

function register(list: readonly unknown[], index: Index): void {
  indexes.set(list, index);
  const first = list[0];
  if (typeof first === 'object' && first !== null) byFirstMessage.set(first, { snapshot: list.slice(), index });
}

/** The index of a list like the last one registered with the same first message, when it holds for this list. */
function adoptTwin(list: readonly unknown[]): Index | undefined {
  const first = list[0];
  const twin = typeof first === 'object' && first !== null ? byFirstMessage.get(first) : undefined;
  if (twin === undefined) return undefined;
  const { snapshot, index } = twin;
  const shared = Math.min(snapshot.length, list.length);
  let same = 0;
  while (same < shared && list[same] === snapshot[same]) same++;
  // Positions below `same` hold (the snapshot's own); check the rest against the map.
  for (let position = same; position < list.length; position++) {
    const message = list[position];
    if (!plainMessage(message) || typeof message.id !== 'string' || index.positions.get(message.id) !== position) return undefined;
  }
  return { positions: index.positions, length: list.length };
}

/** The list's index, built when missing; undefined when the list does not qualify (the plain reducer handles it). */
function indexOf(list: readonly unknown[]): Index | undefined {
  const known = indexes.get(list);
  if (known !== undefined && known.length === list.length) return known;
  const twin = adoptTwin(list);
  if (twin !== undefined) {
    register(list, twin);
    return twin;
  }
  const positions = new Map<string, number>();
  for (let index = 0; index < list.length; index++) {
    const message = list[index];
    if (!plainMessage(message) || typeof message.id !== 'string' || positions.has(message.id)) return undefined;
    positions.set(message.id, index);
  }
  const built = { positions, length: list.length };
  register(list, built);
  return built;
}

/** A message the plain reducer would keep as it is (no coercion, no chunk conversion). */
function plainMessage(value: unknown): value is BaseMessage {
  return isBaseMessage(value) && !BaseMessageChunk.isInstance(value);
}

/**
 * `left` with `incoming` appended (chunks as their non-chunk class) when that is exactly
 * what `messagesStateReducer(left, incoming)` returns; undefined otherwise (a removal, a
 * replacement, a duplicate id, a list that does not qualify). Messages without an id
 * get one, as the plain reducer gives them.
 */
export function appendMessages(left: unknown, incoming: readonly BaseMessage[]): BaseMessage[] | undefined {
  if (!Array.isArray(left)) return undefined;
  const index = indexOf(left);
  if (index === undefined) return undefined;
  // A streamed reply arrives as a chunk: the plain reducer turns it into its non-chunk
  // class; the same conversion, by the plain reducer itself, on that message alone.
  const right = incoming.map((message) => (BaseMessageChunk.isInstance(message) && !RemoveMessage.isInstance(message) ? messagesStateReducer([], [message])[0]! : message));
  const fresh = new Set<string>();
  for (const message of right) {
    if (!plainMessage(message) || RemoveMessage.isInstance(message)) return undefined;
    if (message.id === null || message.id === undefined) {
      message.id = randomUUID();
      (message.lc_kwargs as Record<string, unknown>).id = message.id;
    }
    const id = message.id;
    if (typeof id !== 'string' || fresh.has(id)) return undefined;
    const at = index.positions.get(id);
    if (at !== undefined && at < left.length && (left[at] as BaseMessage).id === id) return undefined; // a replacement
    fresh.add(id);
  }
  const merged = (left as BaseMessage[]).concat(right);
  // Share the map when every new id is unplaced or placed exactly where it lands now.
  const shares = right.every((message, offset) => {
    const at = index.positions.get(message.id!);
    return at === undefined || at === left.length + offset;
  });
  if (shares) {
    right.forEach((message, offset) => index.positions.set(message.id!, left.length + offset));
    register(merged, { positions: index.positions, length: merged.length });
  }
  return merged;
}
