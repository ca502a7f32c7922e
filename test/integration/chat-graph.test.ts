import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { AIMessage, HumanMessage, type BaseMessage } from '@langchain/core/messages';
import { FakeListChatModel } from '@langchain/core/utils/testing';
import { buildChatGraph, type ChatGraph } from '../../src/agent/chat-graph.js';
import { runConfig } from '../../src/agent/run-settings.js';
import { toTaskMessage } from '../../src/agent/task-message.js';
import { openSqliteStorage } from '../../src/adapters/storage-factory.js';
import { syntheticMetadata, TRIGGER_PROMPTS } from '../../src/domain/message-metadata.js';
import type { Storage } from '../../src/app/ports.js';
import { captureLogs } from '../helpers/log-capture.js';
import { makeTempDir, removeTempDir } from '../helpers/temp-dir.js';

/** A fake model that records what each call was given. */
class RecordingModel extends FakeListChatModel {
  calls: BaseMessage[][] = [];
  constructor() {
    super({ responses: ['an answer'] });
  }
  override async _generate(messages: BaseMessage[], options?: this['ParsedCallOptions']) {
    this.calls.push(messages);
    return super._generate(messages, options);
  }
}

describe('chat graph: memory recall → respond', () => {
  let directory: string;
  let storage: Storage;
  let graph: ChatGraph;
  let model: RecordingModel;
  const capture = captureLogs('debug');
  const userId = 'alice';
  const agentId = 'default';

  beforeAll(async () => {
    directory = await makeTempDir();
    storage = await openSqliteStorage({ file: `${directory}/vigil.sqlite`, logger: capture.logger });
    await storage.memories.add({ userId, agentId }, { id: randomUUID(), content: 'Alice loves ramen and dislikes cilantro', origin: { by: 'api' } }, new Date().toISOString());
    await storage.memories.add({ userId: 'bob', agentId }, { id: randomUUID(), content: 'Bob loves ramen too', origin: { by: 'api' } }, new Date().toISOString());
    model = new RecordingModel();
    graph = buildChatGraph({ checkpointer: storage.checkpointer, memories: storage.memories, models: () => model, logger: capture.logger });
  });
  afterAll(async () => {
    await storage?.close();
    await removeTempDir(directory);
  });

  async function turn(threadId: string, input: string | HumanMessage) {
    const settings = { runId: randomUUID(), threadId, userId, agentId, trigger: 'user' as const, model: 'fake', systemPrompt: 'You are kind.' };
    const state = await graph.invoke({ messages: [toTaskMessage(input)] }, runConfig(settings));
    const source = capture.lines.filter((line) => line.threadId === threadId && line.msg === 'Memory query source selected').at(-1);
    return { state, source, lastCall: model.calls.at(-1) ?? [] };
  }

  const synthetic = () => new HumanMessage({ content: TRIGGER_PROMPTS.check_in, additional_kwargs: syntheticMetadata('check_in', 'idle') });

  it('a real message is its own query; recalled memories reach the model call only, never saved history', async () => {
    const threadId = randomUUID();
    const { state, source, lastCall } = await turn(threadId, 'any ramen ideas?');
    expect(source).toMatchObject({ level: 20, querySource: 'current_message', query: 'any ramen ideas?' });
    expect(state.memoryQuerySource).toBe('current_message');
    expect(lastCall[0]?.getType()).toBe('system');
    expect(String(lastCall[0]?.content)).toContain('Alice loves ramen');
    expect(String(lastCall[0]?.content)).not.toContain('Bob'); // the (user, agent) namespace
    expect(state.messages.map((message: BaseMessage) => message.getType())).toEqual(['human', 'ai']);
    expect(JSON.stringify(state.messages)).not.toContain('cilantro');
  });

  it('I2: a synthetic message searches with the last real user message', async () => {
    const threadId = randomUUID();
    await turn(threadId, 'tell me about ramen');
    const { source, lastCall } = await turn(threadId, synthetic());
    expect(source).toMatchObject({ querySource: 'last_real_user_message', query: 'tell me about ramen' });
    expect(String(lastCall[0]?.content)).toContain('Alice loves ramen');
    // The model still sees the natural prompt of the follow-up.
    expect(lastCall.at(-1)?.content).toBe(TRIGGER_PROMPTS.check_in);
  });

  it('I2: a thread with only synthetic messages falls back to the summary', async () => {
    const threadId = randomUUID();
    const settings = { runId: randomUUID(), threadId, userId, agentId, trigger: 'autonomy' as const, model: 'fake', systemPrompt: '' };
    await graph.updateState(runConfig(settings), { summary: 'We talked about ramen shops', messages: [new AIMessage('Hello!')] });
    const { source } = await turn(threadId, synthetic());
    expect(source).toMatchObject({ querySource: 'conversation_summary', query: 'We talked about ramen shops' });
  });

  it('a thread with no query source logs an ERROR and skips retrieval, and still answers', async () => {
    const threadId = randomUUID();
    const { state, lastCall } = await turn(threadId, synthetic());
    const error = capture.lines.find((line) => line.threadId === threadId && line.level === 50);
    expect(error?.msg).toBe('Empty thread - no query source available for memory retrieval');
    expect(state.memoryQuerySource).toBe('none');
    expect(state.recalled).toEqual([]);
    // The agent's prompt alone, then the run context rule every run carries (I4).
    expect(String(lastCall[0]?.content)).toMatch(/^You are kind\.\n\nRun context rule/);
    expect(state.messages.at(-1)?.getType()).toBe('ai');
  });

  it('a multimodal message searches with its text, never "[object Object]"', async () => {
    const threadId = randomUUID();
    const content = [{ type: 'text', text: 'is this ramen?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AA' } }];
    const { source } = await turn(threadId, new HumanMessage({ content }));
    expect(source).toMatchObject({ querySource: 'current_message', query: 'is this ramen?' });
    const { source: after } = await turn(threadId, synthetic());
    expect(after).toMatchObject({ querySource: 'last_real_user_message', query: 'is this ramen?' });
    expect(capture.lines.some((line) => String(line.query ?? '').includes('[object Object]'))).toBe(false);
  });

  it('takes a string or a HumanMessage, keeping a given message\'s metadata (seed 002)', async () => {
    const threadId = randomUUID();
    const { state } = await turn(threadId, 'plain text');
    expect(state.messages[0]?.additional_kwargs).toEqual({});
    const given = synthetic();
    const { state: next } = await turn(threadId, given);
    expect(next.messages[2]?.additional_kwargs).toStrictEqual(given.additional_kwargs);
  });
});
