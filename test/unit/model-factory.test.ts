import { describe, expect, it } from 'vitest';
import { ChatOpenAI } from '@langchain/openai';
import { ChatAnthropic } from '@langchain/anthropic';
import { HumanMessage } from '@langchain/core/messages';
import { createModelFactory, modelLabel } from '../../src/adapters/llm/model-factory.js';
import { DemoChatModel } from '../../src/adapters/llm/demo-chat-model.js';
import { syntheticMetadata } from '../../src/domain/message-metadata.js';

describe('model factory', () => {
  const factory = createModelFactory({ openaiApiKey: 'sk-test', openaiBaseUrl: 'http://127.0.0.1:11434/v1', anthropicApiKey: 'test', timeoutMs: 5_000 });

  it('builds OpenAI (with a compatible base URL) and Anthropic models without touching the network', () => {
    const openai = factory('openai:llama3.1');
    expect(openai).toBeInstanceOf(ChatOpenAI);
    expect((openai as ChatOpenAI).model).toBe('llama3.1');
    expect(factory('anthropic:claude-sonnet-4-5')).toBeInstanceOf(ChatAnthropic);
    expect(factory('openai:llama3.1')).toBe(openai); // cached per spec
  });

  it('refuses an unknown spec and an Anthropic model without a key', () => {
    expect(() => factory('mistral:large')).toThrow(expect.objectContaining({ code: 'VALIDATION_FAILED' }));
    expect(() => createModelFactory({ timeoutMs: 1000 })('anthropic:claude')).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }));
  });

  it('the demo model is deterministic, streams tokens, and labels every reply', async () => {
    const demo = factory('demo');
    expect(demo).toBeInstanceOf(DemoChatModel);
    expect(modelLabel('demo')).toBe('vigil-demo');
    const first = await demo.invoke([new HumanMessage('hello')]);
    const second = await demo.invoke([new HumanMessage('hello')]);
    expect(first.content).toBe(second.content);
    expect(first.content).toContain('[demo model]');
    expect(first.response_metadata).toMatchObject({ model_name: 'vigil-demo', demo: true });
    const chunks: string[] = [];
    for await (const chunk of await demo.stream([new HumanMessage('stream me')])) chunks.push(String(chunk.content));
    expect(chunks.length).toBeGreaterThan(3);
    const followUp = await demo.invoke([new HumanMessage({ content: 'x', additional_kwargs: syntheticMetadata('waiting_for_decision') })]);
    expect(followUp.content).toContain('decide');
  });
});
