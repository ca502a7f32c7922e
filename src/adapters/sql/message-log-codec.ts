/**
 * How a logged message's row holds it: the serializer's JSON without what the row says
 * already.
 *
 * Why: a LangChain message serialises as `{"lc":1,"type":"constructor","id":["langchain_core",
 * "messages","AIMessage"],"kwargs":{"id":"…",…}}`. Of a short reply's ~570 bytes, ~120 are
 * that wrapper and the message id, which is a column of the row; a turn's two messages spent
 * ~240 bytes of its ~4.9 KiB so (issue 10's bytes-per-turn target). A compact row is typed
 * `lc:<class>` and holds the kwargs alone, the id left out when it leads them; reading it
 * rebuilds the serializer's JSON with every key where it was (a loaded message keeps its
 * kwargs' order, and serialises in it again: I3's bit-for-bit round trip), and hands it to
 * the serializer. Empty defaults (`"additional_kwargs":{}` and the like) stay: their place
 * among the keys is part of that order. Rows of type `json` (written before this, or a value
 * that is not a plain LangChain message with this id) are read as they always were.
 */
const COMPACT_PREFIX = 'lc:';
const MESSAGE_PATH = ['langchain_core', 'messages'] as const;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export interface EncodedRow {
  type: string;
  value: Uint8Array;
}

/** The row for a message the serializer dumped as (type, value); unchanged when it is not a plain LangChain message with this id. */
export function compactMessageRow(type: string, value: Uint8Array, messageId: string): EncodedRow {
  if (type !== 'json') return { type, value };
  let parsed: unknown;
  try {
    parsed = JSON.parse(decoder.decode(value));
  } catch {
    return { type, value };
  }
  const className = constructedMessageClass(parsed);
  if (className === undefined) return { type, value };
  const kwargs = (parsed as { kwargs: Record<string, unknown> }).kwargs;
  if (kwargs.id !== messageId) return { type, value };
  // Left out only in the lead, where a read puts it back; anywhere else it stays in its place.
  const { id: _id, ...rest } = kwargs;
  const stored = Object.keys(kwargs)[0] === 'id' ? rest : kwargs;
  return { type: COMPACT_PREFIX + className, value: encoder.encode(JSON.stringify(stored)) };
}

/** The serializer's (type, value) for a stored row, whichever form it was stored in. */
export function expandMessageRow(type: string, value: Uint8Array, messageId: string): EncodedRow {
  if (!type.startsWith(COMPACT_PREFIX)) return { type, value };
  const className = type.slice(COMPACT_PREFIX.length);
  const stored = JSON.parse(decoder.decode(value)) as Record<string, unknown>;
  const kwargs = 'id' in stored ? stored : { id: messageId, ...stored };
  const whole = { lc: 1, type: 'constructor', id: [...MESSAGE_PATH, className], kwargs };
  return { type: 'json', value: encoder.encode(JSON.stringify(whole)) };
}

/** `AIMessage` for `{lc: 1, type: 'constructor', id: ['langchain_core', 'messages', 'AIMessage'], kwargs: {…}}` and nothing else. */
function constructedMessageClass(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const record = value as Record<string, unknown>;
  if (Object.keys(record).length !== 4 || record.lc !== 1 || record.type !== 'constructor') return undefined;
  const path = record.id;
  const kwargs = record.kwargs;
  if (!Array.isArray(path) || path.length !== 3 || path[0] !== MESSAGE_PATH[0] || path[1] !== MESSAGE_PATH[1]) return undefined;
  if (typeof path[2] !== 'string' || !/^[A-Za-z]+$/.test(path[2])) return undefined;
  if (typeof kwargs !== 'object' || kwargs === null || Array.isArray(kwargs)) return undefined;
  return path[2];
}
