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
 *
 * A compact row is then deflated against a dictionary of typical messages (type
 * `lcz:<class>`, preset-dictionary.ts) when that makes it smaller: a message's keys and
 * metadata (a provider's usage, finish reason, tool call shapes, a synthetic message's
 * trigger) are the same from one message to the next. Over the test suite's logged
 * messages (demo, OpenAI-shaped and tool messages) a row shrank from 488 to 118 bytes on
 * average, for ~10 µs to pack each new message; a read unpacks only rows not in memory.
 */
import { PresetDictionary } from '../preset-dictionary.js';

const COMPACT_PREFIX = 'lc:';
const PACKED_PREFIX = 'lcz:';

/** Messages of the shapes vigil logs (values blanked); never changed once rows were packed with it (a new one takes a new prefix). */
const DICTIONARY_V1 = new PresetDictionary([
  '{"content":[{"type":"text","text":""},{"type":"image_url","image_url":{"url":"data:image/png;base64,"}}],"additional_kwargs":{"synthetic":true,"trigger_type":"question_unanswered","trigger_reason":"","approval_id":"","scheduled_at_utc":"","schedule_id":"","hook_id":""},"response_metadata":{}}',
  '{"content":[{"type":"text","text":""}],"additional_kwargs":{},"response_metadata":{"id":"msg_","model":"claude-","model_provider":"anthropic","stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"service_tier":"standard"}},"tool_calls":[],"invalid_tool_calls":[],"usage_metadata":{"input_tokens":0,"output_tokens":0,"total_tokens":0,"input_token_details":{"cache_creation":0,"cache_read":0}}}',
  '{"content":"","additional_kwargs":{"refusal":null},"response_metadata":{"tokenUsage":{"promptTokens":0,"completionTokens":0,"totalTokens":0},"finish_reason":"stop","model_provider":"openai","model_name":"gpt-4o-mini","system_fingerprint":"fp_","usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"provider_message_id":"chatcmpl-"},"tool_calls":[],"invalid_tool_calls":[],"usage_metadata":{"input_tokens":0,"output_tokens":0,"total_tokens":0,"input_token_details":{"audio":0,"cache_read":0},"output_token_details":{"audio":0,"reasoning":0}}}',
  '{"tool_call_id":"call_","name":"","status":"success","content":"","additional_kwargs":{"tool_name":"","tool_arguments":{},"tool_status":"succeeded"},"response_metadata":{"provider_message_id":""}}',
  '{"content":"","additional_kwargs":{"tool_calls":[{"index":0,"id":"call_","type":"function","function":{"name":"","arguments":"{}"}}]},"response_metadata":{"model_provider":"openai","usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0},"provider_message_id":"chatcmpl-"},"tool_calls":[{"name":"","args":{},"id":"call_","type":"tool_call"}],"invalid_tool_calls":[],"usage_metadata":{"input_tokens":0,"output_tokens":0,"total_tokens":0,"input_token_details":{},"output_token_details":{}}}',
  '{"content":"","additional_kwargs":{"synthetic":true,"trigger_type":"check_in","trigger_reason":""},"response_metadata":{}}',
  '{"content":"","additional_kwargs":{},"response_metadata":{"model_name":"vigil-demo","demo":true,"provider_message_id":"run-"},"tool_calls":[],"invalid_tool_calls":[]}',
  '{"content":"","additional_kwargs":{},"response_metadata":{}}',
]);
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
  const compact = encoder.encode(JSON.stringify(stored));
  const packed = DICTIONARY_V1.pack(compact);
  return packed === undefined ? { type: COMPACT_PREFIX + className, value: compact } : { type: PACKED_PREFIX + className, value: packed };
}

/** The serializer's (type, value) for a stored row, whichever form it was stored in. */
export function expandMessageRow(type: string, value: Uint8Array, messageId: string): EncodedRow {
  const packed = type.startsWith(PACKED_PREFIX);
  if (!packed && !type.startsWith(COMPACT_PREFIX)) return { type, value };
  const className = type.slice((packed ? PACKED_PREFIX : COMPACT_PREFIX).length);
  const stored = JSON.parse(decoder.decode(packed ? DICTIONARY_V1.unpack(value) : value)) as Record<string, unknown>;
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
