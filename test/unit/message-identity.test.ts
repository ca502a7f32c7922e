import { describe, expect, it } from 'vitest';
import { AIMessage, AIMessageChunk, HumanMessage, RemoveMessage, SystemMessage, ToolMessage } from '@langchain/core/messages';
import { PROVIDER_ID_KEY, vigilMessagesReducer } from '../../src/agent/message-identity.js';
import { personMessage, toTaskMessage } from '../../src/agent/task-message.js';

/**
 * The reducer every graph's `messages` channel uses (chat, planner): whatever node adds a
 * model's or a tool's message, it enters state under an id vigil generated (I13).
 */
describe('I13: vigil owns message identity', () => {
  it('I13: two replies with the same provider id are both kept, in order, each with its provider id as metadata', () => {
    const first = vigilMessagesReducer([], [new HumanMessage({ id: 'h1', content: 'one' }), new AIMessage({ id: 'chatcmpl-x', content: 'reply 1' })]);
    const second = vigilMessagesReducer(first, [new HumanMessage({ id: 'h2', content: 'two' }), new AIMessageChunk({ id: 'chatcmpl-x', content: 'reply 2' })]);
    expect(second.map((message) => message.content)).toEqual(['one', 'reply 1', 'two', 'reply 2']);
    const replies = second.filter((message) => message.getType() === 'ai');
    expect(new Set(replies.map((message) => message.id)).size).toBe(2);
    expect(replies.map((message) => message.id)).not.toContain('chatcmpl-x');
    expect(replies.map((message) => (message.response_metadata as Record<string, unknown>)[PROVIDER_ID_KEY])).toEqual(['chatcmpl-x', 'chatcmpl-x']);
    // What a checkpoint stores is the adopted id.
    expect(replies.map((message) => message.toDict().data.id)).toEqual(replies.map((message) => message.id));
  });

  it('I13: tool results are adopted too; a reply without any id records none', () => {
    const state = vigilMessagesReducer([], [new AIMessage({ content: 'no id' }), new ToolMessage({ id: 'call-result', tool_call_id: 'call_1', content: 'result' }), new ToolMessage({ id: 'call-result', tool_call_id: 'call_2', content: 'result 2' })]);
    expect(state).toHaveLength(3);
    expect(state.map((message) => (message.response_metadata as Record<string, unknown>)[PROVIDER_ID_KEY])).toEqual([null, 'call-result', 'call-result']);
  });

  it('I13: an adopted message sent again replaces itself; RemoveMessage, human and system ids keep their meaning', () => {
    const state = vigilMessagesReducer([], [new SystemMessage({ id: 'summary', content: 'old summary' }), new HumanMessage({ id: 'task', content: 'task' }), new AIMessage({ id: 'chatcmpl-x', content: 'draft' })]);
    const reply = state[2]!;
    const updated = vigilMessagesReducer(state, [new AIMessage({ id: reply.id!, content: 'final', response_metadata: reply.response_metadata }), new SystemMessage({ id: 'summary', content: 'new summary' }), new HumanMessage({ id: 'task', content: 'task' })]);
    expect(updated.map((message) => message.content)).toEqual(['new summary', 'task', 'final']);
    expect(vigilMessagesReducer(updated, [new RemoveMessage({ id: reply.id! })]).map((message) => message.content)).toEqual(['new summary', 'task']);
  });

  it('I13: a task message always has an id; a client\'s or channel\'s id is kept as metadata only', () => {
    expect(toTaskMessage('hello').id).toMatch(/^[0-9a-f-]{36}$/);
    const message = personMessage('hi', { clientMessageId: 'telegram:42:7' });
    expect(message.id).not.toBe('telegram:42:7');
    expect(message.additional_kwargs).toEqual({ client_message_id: 'telegram:42:7' });
  });
});
