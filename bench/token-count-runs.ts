/**
 * How long counting a message's tokens takes when it is one unbroken run of letters (CJK
 * text without punctuation, a repeated letter) beside ordinary prose, at the 100,000
 * characters a message may hold, and what the encoder alone takes on a run 1/50 as long.
 *
 *   npx tsx bench/token-count-runs.ts
 *
 * Diagnostic only; not part of `npm run bench`. The counter encodes a run in chunks
 * (token-counter.ts, LONG_PIECE); before that, the 100,000-character runs took about an hour.
 */
import { Tiktoken } from 'js-tiktoken/lite';
import cl100kBase from 'js-tiktoken/ranks/cl100k_base';
import { TokenCounter } from '../src/agent/context/token-counter.js';
import { userTurnText } from './fixtures.js';

const LENGTH = 100_000;
/** Distinct characters, so no chunk is answered from the counter's memory of pieces. */
const cjk = (length: number) => Array.from({ length }, (_, index) => String.fromCodePoint(0x4e00 + ((index * 7919) % 20_000))).join('');
const prose = (length: number) => {
  let text = '';
  for (let index = 0; text.length < length; index++) text += `${userTurnText(index)} `;
  return text.slice(0, length);
};
const latin = (length: number) => 'x'.repeat(length);

function timed(work: () => number): { ms: number; tokens: number } {
  const start = performance.now();
  const tokens = work();
  return { ms: performance.now() - start, tokens };
}

const encoder = new Tiktoken(cl100kBase);
encoder.encode('warm up', [], []);
console.log('text                 chars    tokens   counter ms   encoder alone, 1/50 of it: ms');
for (const [name, make] of [['CJK, one run', cjk], ['x, one run', latin], ['prose', prose]] as const) {
  const counted = timed(() => new TokenCounter().text(make(LENGTH)));
  const alone = timed(() => encoder.encode(make(LENGTH / 50), [], []).length);
  console.log(`${name.padEnd(18)} ${String(LENGTH).padStart(8)} ${String(counted.tokens).padStart(9)} ${counted.ms.toFixed(0).padStart(12)} ${alone.ms.toFixed(0).padStart(12)}`);
}

// Pieces never seen before, as every turn brings some (the run's nonce and ids, a person's
// names and numbers): the counter's own byte-pair merge beside the encoder's encode(), on
// the same texts, each text fresh to both (random ids, so neither remembers a piece).
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
let seed = 1;
const nextChar = () => ALPHABET[(seed = (seed * 48271) % 2147483647) % ALPHABET.length]!;
const fresh = () => Array.from({ length: 8 }, () => Array.from({ length: 6 + (seed % 17) }, nextChar).join('')).join(' ');
const texts = Array.from({ length: 4_000 }, fresh);
const encoderTexts = Array.from({ length: 4_000 }, fresh);
const counter = new TokenCounter();
const ours = timed(() => texts.reduce((sum, text) => sum + counter.text(text), 0));
const theirs = timed(() => encoderTexts.reduce((sum, text) => sum + encoder.encode(text, [], []).length, 0));
console.log(`\nnew pieces: ${texts.length} texts of 8 random words; counter ${ours.ms.toFixed(0)} ms (${ours.tokens} tokens), encoder ${theirs.ms.toFixed(0)} ms (${theirs.tokens} tokens); counter ÷ encoder ${(ours.ms / theirs.ms).toFixed(2)}`);
