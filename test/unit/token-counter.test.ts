import { describe, expect, it, vi } from 'vitest';
import { Tiktoken } from 'js-tiktoken/lite';
import cl100kBase from 'js-tiktoken/ranks/cl100k_base';
import { AIMessage, HumanMessage } from '@langchain/core/messages';
import { LONG_PIECE, TokenCounter } from '../../src/agent/context/token-counter.js';
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

  it('equal the encoder\'s count for texts made of pieces never seen before (random letters, digits, ids, accents, CJK, emoji), each piece merged byte pair by byte pair', () => {
    const encoder = new Tiktoken(cl100kBase);
    const counter = new TokenCounter();
    const next = random(11);
    const alphabets = [
      'abcdefghijklmnopqrstuvwxyz',
      'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-',
      '0123456789abcdef-',
      'àáâãäåæçèéêëìíîïñòóôõöøùúûüýÿßœ',
      '日本語中文한국어ひらがなカタカナ',
      '😀🎉👍🏽🧪✨',
      ' \n\t.,;:!?()[]{}<>\'"`',
    ].map((alphabet) => Array.from(alphabet));
    let pieces = 0;
    for (let round = 0; round < 1_500; round++) {
      let text = '';
      const words = 1 + Math.floor(next() * 12);
      for (let word = 0; word < words; word++) {
        const alphabet = alphabets[Math.floor(next() * alphabets.length)]!;
        const length = 1 + Math.floor(next() * 20);
        for (let index = 0; index < length; index++) text += alphabet[Math.floor(next() * alphabet.length)];
        text += next() < 0.7 ? ' ' : '';
      }
      const split = [...text.matchAll(new RegExp(cl100kBase.pat_str, 'gu'))].map((match) => match[0]);
      // A piece longer than LONG_PIECE is counted in chunks, an over-count of its own (tested below).
      if (split.some((piece) => piece.length > LONG_PIECE)) continue;
      pieces += split.length;
      expect(counter.text(text), JSON.stringify(text)).toBe(encoder.encode(text, [], []).length);
    }
    expect(pieces).toBeGreaterThan(5_000);
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

  describe('an unbroken run of letters (the encoder takes time that grows with the square of a piece)', () => {
    const RUNS = { cjk: '字'.repeat(300), latin: 'x'.repeat(600), emoji: '😀a'.repeat(200), mixed: `Intro: ${'的是不了人我在有他这'.repeat(30)}. Done.` };

    it('is never handed to the encoder whole, counted or cut: a 100,000-character message costs time in proportion to its length', () => {
      const encode = vi.spyOn(Tiktoken.prototype, 'encode');
      try {
        const counter = new TokenCounter();
        const message = '字'.repeat(100_000);
        expect(counter.text(message)).toBeGreaterThanOrEqual(100_000 / 2);
        expect(counter.truncate(`${'x'.repeat(50_000)} tail`, 10)).toBe('x'.repeat(80));
        expect(encode).toHaveBeenCalled();
        const longest = Math.max(...encode.mock.calls.map(([text]) => [...String(text)].length));
        expect(longest).toBeLessThanOrEqual(LONG_PIECE);
      } finally {
        encode.mockRestore();
      }
    });

    it('counts at least the encoder\'s own count and at most a token more per chunk; a cut keeps a prefix of the text', () => {
      const encoder = new Tiktoken(cl100kBase);
      const counter = new TokenCounter();
      for (const [name, text] of Object.entries(RUNS)) {
        const exact = encoder.encode(text, [], []).length;
        const counted = counter.text(text);
        expect(counted, name).toBeGreaterThanOrEqual(exact);
        expect(counted, name).toBeLessThanOrEqual(exact + Math.ceil([...text].length / 16));
        const cut = counter.truncate(text, 25);
        expect(text.startsWith(cut), name).toBe(true);
        expect(counter.text(cut), name).toBeLessThanOrEqual(25);
      }
    });
  });
});
