/**
 * How a row of `thread_messages` holds a message (src/adapters/sql/message-row-codec.ts): the
 * serializer's JSON without its wrapper and the id its column holds, packed against a
 * dictionary. Whatever the message, a row decodes to exactly the serializer's JSON (I3), and
 * anything that is not a plain LangChain message with that id is kept as the serializer gave it.
 */
import {
  AIMessage,
  AIMessageChunk,
  ChatMessage,
  FunctionMessage,
  HumanMessage,
  RemoveMessage,
  SystemMessage,
  ToolMessage,
  type BaseMessage,
} from '@langchain/core/messages';
import { JsonPlusSerializer } from '@langchain/langgraph-checkpoint';
import { describe, expect, it } from 'vitest';
import { decodeMessageRow, encodeMessageRow } from '../../src/adapters/sql/message-row-codec.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const serde = new JsonPlusSerializer();

/** The shapes vigil stores and stranger ones: parts, tool calls, usage, nested and unicode kwargs, special values, long text, an empty message. */
const MESSAGES: [string, BaseMessage][] = [
  ['a person\'s plain message', new HumanMessage({ id: 'human-1', content: 'hello ✓' })],
  ['an empty message', new HumanMessage({ id: 'human-empty', content: '' })],
  [
    'a multimodal message with a name',
    new HumanMessage({ id: 'human-parts', name: 'ada', content: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }] }),
  ],
  [
    'a synthetic message with nested, unicode kwargs (I1)',
    new HumanMessage({
      id: 'synthetic',
      content: 'Continue our conversation naturally.',
      additional_kwargs: {
        synthetic: true,
        trigger_type: 'question_unanswered',
        trigger_reason: 'silence',
        nested: { list: [1, 'two', { three: true, four: null }], emoji: '✓ ünïcödé 🙂 \u2028 "quoted" \\ back \u0000', empty: {}, deep: { a: { b: { c: [-0.5, 1e21, 5e-7] } } } },
        flags: [false, null, 0, ''],
      },
    }),
  ],
  [
    'special values the serializer encodes (a date, a set, a map, bytes, a lone surrogate)',
    new HumanMessage({ id: 'special', content: 'odd \ud800 values', additional_kwargs: { when: new Date(0), set: new Set([1, 'two']), map: new Map([['a', 1]]), bytes: new Uint8Array([1, 2, 3]) } }),
  ],
  [
    'a model reply with tool calls, an invalid call, usage and provider metadata',
    new AIMessage({
      id: 'ai-tools',
      content: '',
      name: 'vigil',
      tool_calls: [{ id: 'call-1', name: 'lookup', args: { query: 'weather', nested: { days: [1, 2] } }, type: 'tool_call' }],
      invalid_tool_calls: [{ id: 'bad-1', name: 'lookup', args: '{oops', error: 'not JSON', type: 'invalid_tool_call' }],
      usage_metadata: { input_tokens: 12, output_tokens: 3, total_tokens: 15, input_token_details: { cache_read: 4 }, output_token_details: { reasoning: 1 } },
      response_metadata: { model_name: 'gpt-4o-mini', finish_reason: 'tool_calls', provider_message_id: 'chatcmpl-1', usage: { prompt_tokens: 12 } },
      additional_kwargs: { refusal: null },
    }),
  ],
  ['a streamed reply (a chunk)', new AIMessageChunk({ id: 'chunk', content: 'part', tool_call_chunks: [{ id: 'call-2', name: 'lookup', args: '{"q":', index: 0, type: 'tool_call_chunk' }] })],
  ['a reply of content blocks', new AIMessage({ id: 'ai-blocks', content: [{ type: 'text', text: 'It is sunny. 🌞' }, { type: 'text', text: '' }] })],
  ['a tool result with an artifact', new ToolMessage({ id: 'tool-1', tool_call_id: 'call-1', name: 'lookup', content: 'sunny ✓', status: 'success', artifact: { raw: [1, 2, 3], nested: { ok: true } } })],
  ['a tool error', new ToolMessage({ id: 'tool-2', tool_call_id: 'call-2', content: 'failed', status: 'error' })],
  ['a system message', new SystemMessage({ id: 'system-1', content: 'a note from the system', additional_kwargs: { vigil: { origin: 'system' } } })],
  ['a chat message with a role', new ChatMessage({ id: 'chat-1', content: 'as a critic', role: 'critic' })],
  ['a function message', new FunctionMessage({ id: 'function-1', content: '{}', name: 'fn' })],
  ['a removal', new RemoveMessage({ id: 'removed' })],
  ['a long message', new HumanMessage({ id: 'long', content: 'a long message from a person, with some variety 1234567890. '.repeat(200) })],
];

async function dumped(value: unknown): Promise<{ type: string; bytes: Uint8Array }> {
  const [type, bytes] = await serde.dumpsTyped(value);
  return { type, bytes: typeof bytes === 'string' ? encoder.encode(bytes) : bytes };
}

describe('message rows (thread_messages)', () => {
  for (const [what, message] of MESSAGES) {
    it(`I3: ${what}: encode then decode gives the serializer's JSON byte for byte, and loads the same message`, async () => {
      const { type, bytes } = await dumped(message);
      const row = encodeMessageRow(type, bytes, message.id!);
      // Compact: neither the serializer's wrapper nor the id the row's column holds.
      expect(row.type).toBe(message.constructor.name === 'AIMessageChunk' ? 'lc:AIMessageChunk' : message.type === 'generic' ? 'generic' : message.type);
      const text = row.body[0] === 0x01 ? '' : decoder.decode(row.body);
      expect(text).not.toContain('langchain_core');
      const back = decodeMessageRow(row.type, row.body, message.id!);
      expect(back.type).toBe(type);
      expect(decoder.decode(back.value)).toBe(decoder.decode(bytes));
      const loaded = (await serde.loadsTyped(back.type, back.value)) as BaseMessage;
      const reference = (await serde.loadsTyped(type, bytes)) as BaseMessage;
      expect(loaded.constructor).toBe(reference.constructor);
      expect(JSON.stringify(loaded)).toBe(JSON.stringify(reference));
    });
  }

  it('packs each of those messages against the dictionary: a packed body starts with 0x01, and is smaller than the serializer\'s JSON', async () => {
    for (const [, message] of MESSAGES) {
      const { type, bytes } = await dumped(message);
      const row = encodeMessageRow(type, bytes, message.id!);
      expect(row.body[0]).toBe(0x01);
      expect(row.body.byteLength).toBeLessThan(bytes.byteLength);
    }
  });

  it('a body that would not shrink is stored as its compact JSON (starting with "{"), and decodes the same', () => {
    const json = '{"lc":1,"type":"constructor","id":["langchain_core","messages","HumanMessage"],"kwargs":{"id":"m"}}';
    const row = encodeMessageRow('json', encoder.encode(json), 'm');
    expect(row.type).toBe('human');
    expect(decoder.decode(row.body)).toBe('{}');
    expect(decoder.decode(decodeMessageRow(row.type, row.body, 'm').value)).toBe(json);
  });

  it('keeps the id in place when it is not the first key, and decodes it where it was', () => {
    const json = '{"lc":1,"type":"constructor","id":["langchain_core","messages","AIMessage"],"kwargs":{"content":"x","id":"m","additional_kwargs":{},"response_metadata":{}}}';
    const row = encodeMessageRow('json', encoder.encode(json), 'm');
    expect(row.type).toBe('ai');
    expect(decoder.decode(decodeMessageRow(row.type, row.body, 'm').value)).toBe(json);
  });

  it('stores anything else as the serializer gave it (typed serde:<type>): another id, not a message, not JSON, another serializer type', async () => {
    const other = await dumped(new HumanMessage({ id: 'someone-else', content: 'x' }));
    const cases: [string, Uint8Array, string][] = [
      ['json', other.bytes, 'mine'],
      ['json', (await dumped({ lc: 1, type: 'constructor', id: ['langchain_core', 'documents', 'Document'], kwargs: { id: 'mine' } })).bytes, 'mine'],
      ['json', encoder.encode('{"lc":1,"type":"constructor","id":["langchain_core","messages","Human Message"],"kwargs":{"id":"mine"}}'), 'mine'],
      ['json', encoder.encode('{"lc":1,"type":"constructor","id":["langchain_core","messages","HumanMessage"],"kwargs":{"id":"mine"},"extra":1}'), 'mine'],
      ['json', encoder.encode('[1,2,3]'), 'mine'],
      ['json', encoder.encode('{not json'), 'mine'],
      ['bytes', new Uint8Array([0, 1, 2, 255]), 'mine'],
    ];
    for (const [type, bytes, messageId] of cases) {
      const row = encodeMessageRow(type, bytes, messageId);
      expect(row.type).toBe(`serde:${type}`);
      expect(row.body).toBe(bytes);
      const back = decodeMessageRow(row.type, row.body, messageId);
      expect(back.type).toBe(type);
      expect(back.value).toBe(bytes);
    }
  });

  it('refuses a row of a type it does not know', () => {
    expect(() => decodeMessageRow('martian', encoder.encode('{}'), 'm')).toThrow('unknown type');
  });
});
