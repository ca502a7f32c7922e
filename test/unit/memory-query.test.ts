import { describe, expect, it } from 'vitest';
import { chooseMemoryQuery } from '../../src/domain/memory-query.js';
import type { ClassifiableMessage } from '../../src/domain/message-metadata.js';

const user = (content: unknown): ClassifiableMessage => ({ type: 'human', content, additional_kwargs: {} });
const synthetic = (content = 'Continue our conversation naturally.'): ClassifiableMessage => ({ type: 'human', content, additional_kwargs: { synthetic: true, trigger_type: 'check_in' } });
const ai = (content: string): ClassifiableMessage => ({ type: 'ai', content });

describe('memory query source (seed 000, phase 4)', () => {
  it('uses the current real user message', () => {
    expect(chooseMemoryQuery([ai('hi'), user('what should I eat?')], null)).toEqual({ source: 'current_message', query: 'what should I eat?' });
  });

  it('I2: a synthetic current message falls back to the last real user message', () => {
    const messages = [user('I love ramen'), ai('noted'), user('plan dinner'), ai('ok'), synthetic()];
    expect(chooseMemoryQuery(messages, 'summary')).toEqual({ source: 'last_real_user_message', query: 'plan dinner' });
  });

  it('I2: a thread with only synthetic messages falls back to the summary', () => {
    expect(chooseMemoryQuery([synthetic(), ai('hello?'), synthetic()], 'talked about ramen')).toEqual({ source: 'conversation_summary', query: 'talked about ramen' });
  });

  it('no source at all: none, so the caller logs an ERROR and skips', () => {
    expect(chooseMemoryQuery([synthetic(), ai('hello?')], null)).toEqual({ source: 'none', query: '' });
    expect(chooseMemoryQuery([], '  ')).toEqual({ source: 'none', query: '' });
  });

  it('uses the text of a multimodal message, never "[object Object]"', () => {
    const multimodal = user([{ type: 'text', text: 'what is in this photo' }, { type: 'image_url', image_url: { url: 'data:,' } }]);
    expect(chooseMemoryQuery([multimodal], null)).toEqual({ source: 'current_message', query: 'what is in this photo' });
    // An image alone has no text to search with: fall back as for a synthetic message.
    const imageOnly = user([{ type: 'image_url', image_url: { url: 'data:,' } }]);
    expect(chooseMemoryQuery([user('earlier words'), ai('x'), imageOnly], null)).toEqual({ source: 'last_real_user_message', query: 'earlier words' });
    expect(chooseMemoryQuery([synthetic(), multimodal, synthetic()], null).query).not.toContain('[object Object]');
  });

  it('I1: a human message with synthetic: "true" (a string) is a real message', () => {
    const stringFlag: ClassifiableMessage = { type: 'human', content: 'real words', additional_kwargs: { synthetic: 'true' } };
    expect(chooseMemoryQuery([stringFlag], null)).toEqual({ source: 'current_message', query: 'real words' });
  });
});
