import { describe, expect, it } from 'vitest';
import { Tiktoken } from 'js-tiktoken/lite';
import cl100kBase from 'js-tiktoken/ranks/cl100k_base';
import { AIMessage, HumanMessage } from '@langchain/core/messages';
import { TokenCounter } from '../../src/agent/context/token-counter.js';
import { seededRandom as random } from '../helpers/seeded-random.js';

const PARTS = ['hello', ' world', '  ', '\n', '\n\n', '\r\n', ' \n ', '\t', "'s", "'LL", 'don\'t', '12345', ' 7', '3.14', '!!', ' ?!', '...', 'é', 'naïve', '日本語', ' 😀', '😀😀', '<|endoftext|>', '<|fim_prefix|>', '{"a":1}', ' kalomine', 'strablegeron', 'x', ' ', '   \n\n  ', 'ÄÖÜ', '\u00a0', '--', '`code`'];

describe('token counts (I14)', () => {
  it('equal the encoder\'s own count of the whole text, however the text is made up (pieces are counted once, then remembered)', () => {
    const encoder = new Tiktoken(cl100kBase);
    const counter = new TokenCounter();
    const next = random(3);
    for (let round = 0; round < 800; round++) {
      let text = '';
      const parts = Math.floor(next() * 40);
      for (let index = 0; index < parts; index++) text += PARTS[Math.floor(next() * PARTS.length)];
      expect(counter.text(text), JSON.stringify(text)).toBe(encoder.encode(text, [], []).length);
    }
  });

  it('equal the encoder\'s count for long texts of many paragraphs, counted paragraph by paragraph, a paragraph changed between counts', () => {
    const encoder = new Tiktoken(cl100kBase);
    const counter = new TokenCounter();
    const next = random(7);
    const paragraph = () => {
      let text = '';
      const parts = 5 + Math.floor(next() * 30);
      for (let index = 0; index < parts; index++) text += PARTS[Math.floor(next() * PARTS.length)];
      return text;
    };
    const paragraphs = Array.from({ length: 12 }, paragraph);
    for (let round = 0; round < 300; round++) {
      // Mostly the same paragraphs, one changed each round (a system prompt with a new nonce).
      paragraphs[Math.floor(next() * paragraphs.length)] = paragraph();
      const text = paragraphs.join(['\n', '\n\n', '\r\n', ' \n', '\n '][round % 5]!);
      expect(text.length).toBeGreaterThan(200);
      expect(counter.text(text), JSON.stringify(text)).toBe(encoder.encode(text, [], []).length);
    }
  });

  it('a message counted before answers its count again; one whose content was replaced, or a copy with other content, is counted afresh', () => {
    const counter = new TokenCounter();
    const fresh = () => new TokenCounter();
    const message = new HumanMessage({ id: 'm-1', content: 'a short message from a person' });
    const first = counter.message(message).tokens;
    expect(counter.message(message).tokens).toBe(first);
    message.content = 'a much longer message from a person, with several more words in it than before';
    expect(counter.message(message).tokens).toBe(fresh().message(message).tokens);
    expect(counter.message(message).tokens).toBeGreaterThan(first);
    // The same id, other content (a copy cut to fit): never the original's count.
    const cut = new AIMessage({ id: 'm-2', content: 'one two three four five six seven eight nine ten' });
    counter.message(cut);
    const shorter = new AIMessage({ id: 'm-2', content: 'one two' });
    expect(counter.message(shorter).tokens).toBe(fresh().message(shorter).tokens);
  });
});
