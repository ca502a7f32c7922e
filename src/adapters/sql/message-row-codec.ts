/**
 * How a row of `thread_messages` holds a message: the serializer's JSON without what the
 * row says already, deflated against a dictionary of message shapes.
 *
 * Why: a LangChain message serialises as `{"lc":1,"type":"constructor","id":["langchain_core",
 * "messages","AIMessage"],"kwargs":{"id":"…",…}}`. Of a short reply's ~570 bytes, ~120 are
 * that wrapper and the message id, which is a column of the row. A row of a common class is
 * typed by the message's LangChain type (`human`, `ai`, `tool`, `system`: what SQL on the
 * table reads naturally), another class by `lc:<class>`, and its body is the kwargs alone, the
 * id left out when it leads them. Reading it rebuilds the serializer's JSON with every key
 * where it was (a loaded message keeps its kwargs' order and serialises in it again: I3's
 * bit-for-bit round trip). Empty defaults (`"additional_kwargs":{}`) stay: their place among
 * the keys is part of that order.
 *
 * The body is then deflated against a dictionary of typical messages when that makes it
 * smaller (a leading 0x01, which JSON never starts with): a message's keys and metadata (a
 * provider's usage, finish reason, tool call shapes, a synthetic message's trigger) are the
 * same from one message to the next. Over the test suite's messages (demo, OpenAI-shaped and
 * tool messages) a row shrank from 488 to 118 bytes on average, for ~10 µs to pack each new
 * message; a read unpacks only rows no process memory holds.
 *
 * Anything else the serializer produced (not a plain LangChain message with this id) is
 * stored as it came, typed `serde:<its type>`.
 */
import { PresetDictionary } from './preset-dictionary.js';

const PACKED = 0x01;
const OTHER_CLASS = 'lc:';
const SERIALIZED = 'serde:';

/** Messages of the shapes vigil stores (values blanked); never changed once rows were packed with it (a new one takes a new leading byte). */
export const MESSAGE_DICTIONARY_V1 = new PresetDictionary([
  '{"content":[{"type":"text","text":""},{"type":"image_url","image_url":{"url":"data:image/png;base64,"}}],"additional_kwargs":{"synthetic":true,"trigger_type":"question_unanswered","trigger_reason":"","approval_id":"","scheduled_at_utc":"","schedule_id":"","hook_id":""},"response_metadata":{}}',
  '{"content":[{"type":"text","text":""}],"additional_kwargs":{},"response_metadata":{"id":"msg_","model":"claude-","model_provider":"anthropic","stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"service_tier":"standard"}},"tool_calls":[],"invalid_tool_calls":[],"usage_metadata":{"input_tokens":0,"output_tokens":0,"total_tokens":0,"input_token_details":{"cache_creation":0,"cache_read":0}}}',
  '{"content":"","additional_kwargs":{"refusal":null},"response_metadata":{"tokenUsage":{"promptTokens":0,"completionTokens":0,"totalTokens":0},"finish_reason":"stop","model_provider":"openai","model_name":"gpt-4o-mini","system_fingerprint":"fp_","usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"provider_message_id":"chatcmpl-"},"tool_calls":[],"invalid_tool_calls":[],"usage_metadata":{"input_tokens":0,"output_tokens":0,"total_tokens":0,"input_token_details":{"audio":0,"cache_read":0},"output_token_details":{"audio":0,"reasoning":0}}}',
  '{"tool_call_id":"call_","name":"","status":"success","content":"","additional_kwargs":{"tool_name":"","tool_arguments":{},"tool_status":"succeeded"},"response_metadata":{"provider_message_id":""}}',
  '{"content":"","additional_kwargs":{"tool_calls":[{"index":0,"id":"call_","type":"function","function":{"name":"","arguments":"{}"}}]},"response_metadata":{"model_provider":"openai","usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0},"provider_message_id":"chatcmpl-"},"tool_calls":[{"name":"","args":{},"id":"call_","type":"tool_call"}],"invalid_tool_calls":[],"usage_metadata":{"input_tokens":0,"output_tokens":0,"total_tokens":0,"input_token_details":{},"output_token_details":{}}}',
  '{"content":"","additional_kwargs":{"synthetic":true,"trigger_type":"check_in","trigger_reason":""},"response_metadata":{}}',
  '{"content":"","additional_kwargs":{},"response_metadata":{"model_name":"vigil-demo","demo":true,"provider_message_id":"run-"},"tool_calls":[],"invalid_tool_calls":[]}',
  '{"content":"","additional_kwargs":{},"response_metadata":{}}',
]);

/** The LangChain type of each common message class, the row's `type` for it. */
const TYPE_OF_CLASS: Readonly<Record<string, string>> = {
  HumanMessage: 'human',
  AIMessage: 'ai',
  ToolMessage: 'tool',
  SystemMessage: 'system',
  ChatMessage: 'generic',
  FunctionMessage: 'function',
  RemoveMessage: 'remove',
};
const CLASS_OF_TYPE: Readonly<Record<string, string>> = Object.fromEntries(Object.entries(TYPE_OF_CLASS).map(([className, type]) => [type, className]));
const MESSAGE_PATH = ['langchain_core', 'messages'] as const;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export interface MessageRowBody {
  /** The row's `type`: a LangChain message type, `lc:<class>`, or `serde:<serializer type>`. */
  type: string;
  body: Uint8Array;
}

/** The row for a message the serializer dumped as (type, value). */
export function encodeMessageRow(serializerType: string, value: Uint8Array, messageId: string): MessageRowBody {
  const stored = { type: SERIALIZED + serializerType, body: value };
  if (serializerType !== 'json') return stored;
  let parsed: unknown;
  try {
    parsed = JSON.parse(decoder.decode(value));
  } catch {
    return stored;
  }
  const className = constructedMessageClass(parsed);
  if (className === undefined) return stored;
  const kwargs = (parsed as { kwargs: Record<string, unknown> }).kwargs;
  if (kwargs.id !== messageId) return stored;
  // Left out only in the lead, where a read puts it back; anywhere else it stays in its place.
  const { id: _id, ...rest } = kwargs;
  const compact = encoder.encode(JSON.stringify(Object.keys(kwargs)[0] === 'id' ? rest : kwargs));
  return { type: TYPE_OF_CLASS[className] ?? OTHER_CLASS + className, body: MESSAGE_DICTIONARY_V1.packMarked(compact, PACKED) };
}

/** The serializer's (type, value) for a stored row. */
export function decodeMessageRow(type: string, body: Uint8Array, messageId: string): { type: string; value: Uint8Array } {
  if (type.startsWith(SERIALIZED)) return { type: type.slice(SERIALIZED.length), value: body };
  const className = type.startsWith(OTHER_CLASS) ? type.slice(OTHER_CLASS.length) : CLASS_OF_TYPE[type];
  if (className === undefined) throw new Error(`a message row of unknown type "${type}"`);
  const json = MESSAGE_DICTIONARY_V1.unpackMarked(body, PACKED);
  const stored = JSON.parse(decoder.decode(json)) as Record<string, unknown>;
  const kwargs = 'id' in stored ? stored : { id: messageId, ...stored };
  return { type: 'json', value: encoder.encode(JSON.stringify({ lc: 1, type: 'constructor', id: [...MESSAGE_PATH, className], kwargs })) };
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
