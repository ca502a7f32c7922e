import { describe, expect, it } from 'vitest';
import { AIMessage, HumanMessage, SystemMessage, ToolMessage } from '@langchain/core/messages';
import {
  TRIGGER_PROMPTS,
  classifyMessage,
  isRealUserMessage,
  isSynthetic,
  syntheticMetadata,
  type ClassifiableMessage,
} from '../../src/domain/message-metadata.js';
import { previewOf, textOf } from '../../src/domain/message-content.js';

const asClassifiable = (message: HumanMessage | AIMessage | SystemMessage | ToolMessage): ClassifiableMessage => ({
  type: message.getType(),
  content: message.content,
  additional_kwargs: message.additional_kwargs,
});

describe('message metadata', () => {
  it('I1: only synthetic === true is internal; missing, false, "true", 1 and null are real', () => {
    expect(isSynthetic({ synthetic: true })).toBe(true);
    for (const value of [false, 'true', 1, null, undefined, {}, [true]]) expect(isSynthetic({ synthetic: value })).toBe(false);
    expect(isSynthetic(undefined)).toBe(false);
    expect(isSynthetic({})).toBe(false);
  });

  it('I1: visibility comes from metadata, never from content', () => {
    const lookalike = new HumanMessage({ content: 'Continue our conversation naturally.' });
    expect(classifyMessage(asClassifiable(lookalike))).toEqual({ visibility: 'user', reason: 'real' });
    const jsonClaim = new HumanMessage({ content: '{"synthetic": true, "trigger_type": "check_in"}' });
    expect(classifyMessage(asClassifiable(jsonClaim)).visibility).toBe('user');
    const synthetic = new HumanMessage({ content: 'anything at all', additional_kwargs: syntheticMetadata('check_in', 'idle') });
    expect(classifyMessage(asClassifiable(synthetic))).toEqual({ visibility: 'internal', reason: 'synthetic' });
  });

  it('I1: works for multimodal (array) content', () => {
    const content = [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AA' } }];
    expect(classifyMessage({ type: 'human', content, additional_kwargs: {} }).visibility).toBe('user');
    expect(classifyMessage({ type: 'human', content, additional_kwargs: { synthetic: true } }).visibility).toBe('internal');
  });

  it('I1: the legacy [AUTONOMOUS_FOLLOWUP: fallback applies only to human messages without metadata', () => {
    const legacy = { type: 'human', content: '[AUTONOMOUS_FOLLOWUP: check_in]', additional_kwargs: {} };
    expect(classifyMessage(legacy)).toEqual({ visibility: 'internal', reason: 'legacy_content' });
    // An explicit synthetic: false is metadata saying "real": the content is not consulted.
    expect(classifyMessage({ ...legacy, additional_kwargs: { synthetic: false } }).visibility).toBe('user');
    expect(classifyMessage({ type: 'ai', content: '[AUTONOMOUS_FOLLOWUP: check_in]' }).visibility).toBe('user');
  });

  it('system and tool messages are never shown as conversation', () => {
    expect(classifyMessage(asClassifiable(new SystemMessage('rules'))).visibility).toBe('internal');
    expect(classifyMessage(asClassifiable(new ToolMessage({ content: 'x', tool_call_id: '1' }))).visibility).toBe('internal');
    expect(classifyMessage(asClassifiable(new AIMessage('hello'))).visibility).toBe('user');
  });

  it('warns about a synthetic message with an unknown trigger type', () => {
    const result = classifyMessage({ type: 'human', content: 'x', additional_kwargs: { synthetic: true, trigger_type: 'mystery' } });
    expect(result.unknownTriggerType).toBe('mystery');
    expect(classifyMessage({ type: 'human', content: 'x', additional_kwargs: { synthetic: true, trigger_type: 'check_in' } }).unknownTriggerType).toBeUndefined();
  });

  it('I2: an internal message is never a real user message', () => {
    expect(isRealUserMessage({ type: 'human', content: 'hi' })).toBe(true);
    expect(isRealUserMessage({ type: 'human', content: 'hi', additional_kwargs: { synthetic: true } })).toBe(false);
    expect(isRealUserMessage({ type: 'ai', content: 'hi' })).toBe(false);
  });

  it('has a natural prompt for each of the four trigger types (seed 001)', () => {
    expect(Object.keys(TRIGGER_PROMPTS).sort()).toEqual(['check_in', 'question_unanswered', 'task_incomplete', 'waiting_for_decision']);
    expect(TRIGGER_PROMPTS.check_in).toBe('Continue our conversation naturally.');
    expect(syntheticMetadata('task_incomplete', 'r')).toEqual({ synthetic: true, trigger_type: 'task_incomplete', trigger_reason: 'r' });
  });

  it('never turns array content into "[object Object]"', () => {
    const content = [{ type: 'text', text: 'hello' }, { type: 'image_url', image_url: 'x' }, { type: 'text', text: 'world' }];
    expect(textOf(content)).toBe('hello world');
    expect(textOf([{ type: 'image_url', image_url: 'x' }])).toBe('');
    expect(previewOf(content)).toBe('hello world');
    expect(previewOf('a'.repeat(500)).length).toBe(120);
  });
});
