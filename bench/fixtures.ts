/**
 * Deterministic synthetic conversations: the same seed gives the same messages, so
 * every variant and backend is measured on identical data.
 */
import { AIMessage, HumanMessage, SystemMessage, type BaseMessage } from '@langchain/core/messages';
import { AUTONOMOUS_TRIGGER_TYPES, LEGACY_SYNTHETIC_PREFIX, syntheticMetadata } from '../src/domain/message-metadata.js';
import { DEMO_MODEL_NAME } from '../src/adapters/llm/demo-chat-model.js';
import { seededRandom as random } from '../test/helpers/seeded-random.js';

/**
 * A vocabulary of 4,000 pseudo-words drawn with a Zipf-like skew: text about as
 * compressible as English (deflate ~2.5×), so PostgreSQL's TOAST compression and
 * SQLite's plain storage see realistic sizes (a 60-word vocabulary compresses ~5×).
 */
const SYLLABLES = 'ka lo mi ne ru sa te vo pi da ger ton ble stra in on er ar es ti an re de co pro vi ex un ma li na'.split(' ');
const WORDS: readonly string[] = (() => {
  const next = random(42);
  const words: string[] = [];
  for (let index = 0; index < 4_000; index++) {
    const syllables = 1 + Math.floor(next() * next() * 4);
    let word = '';
    for (let part = 0; part < syllables; part++) word += SYLLABLES[Math.floor(next() * SYLLABLES.length)];
    words.push(word);
  }
  return words;
})();

function word(next: () => number): string {
  return WORDS[Math.floor(WORDS.length * next() ** 3)]!;
}

/** The fixtures' generator is the tests' (mulberry32): the same seed, the same thread. */
export { random };

function sentence(next: () => number, minChars: number, maxChars: number): string {
  const target = minChars + Math.floor(next() * (maxChars - minChars));
  let text = '';
  while (text.length < target) text += `${word(next)}${next() < 0.08 ? ',' : ''} `;
  return `${text.charAt(0).toUpperCase()}${text.slice(1, target).trimEnd()}.`;
}

function id(prefix: string, seed: number, index: number): string {
  return `${prefix}-${seed.toString(36)}-${index.toString(36).padStart(6, '0')}`;
}

function humanContent(next: () => number): HumanMessage['content'] {
  const text = sentence(next, 30, 200);
  // About one human message in six is multimodal: text plus an image block.
  if (next() < 0.16) return [{ type: 'text', text }, { type: 'image_url', image_url: { url: 'https://example.invalid/photo.png' } }];
  return text;
}

function aiMessage(next: () => number, messageId: string): AIMessage {
  return new AIMessage({ id: messageId, content: sentence(next, 80, 400), response_metadata: { model_name: DEMO_MODEL_NAME, demo: true } });
}

function syntheticHuman(next: () => number, messageId: string): HumanMessage {
  const type = AUTONOMOUS_TRIGGER_TYPES[Math.floor(next() * AUTONOMOUS_TRIGGER_TYPES.length)]!;
  return new HumanMessage({ id: messageId, content: 'Continue our conversation naturally.', additional_kwargs: syntheticMetadata(type, 'idle for 2h') });
}

export interface MixStats {
  total: number;
  synthetic: number;
  legacy: number;
  multimodal: number;
  system: number;
}

/**
 * An unordered mix for filtering and history: ~30% synthetic (metadata), ~4% legacy
 * `[AUTONOMOUS_FOLLOWUP:` content without metadata, ~1% system, the rest real human
 * and AI messages, some of them multimodal.
 */
export function mixedMessages(count: number, seed = 1): { messages: BaseMessage[]; mix: MixStats } {
  const next = random(seed);
  const messages: BaseMessage[] = [];
  const mix: MixStats = { total: count, synthetic: 0, legacy: 0, multimodal: 0, system: 0 };
  for (let index = 0; index < count; index++) {
    const messageId = id('mix', seed, index);
    const roll = next();
    let message: BaseMessage;
    if (roll < 0.3) {
      message = syntheticHuman(next, messageId);
      mix.synthetic++;
    } else if (roll < 0.34) {
      message = new HumanMessage({ id: messageId, content: `${LEGACY_SYNTHETIC_PREFIX} check_in] Continue our conversation naturally.` });
      mix.legacy++;
    } else if (roll < 0.35) {
      message = new SystemMessage({ id: messageId, content: 'Conversation summary: ' + sentence(next, 60, 200) });
      mix.system++;
    } else if (roll < 0.65) {
      message = new HumanMessage({ id: messageId, content: humanContent(next) });
    } else {
      message = aiMessage(next, messageId);
    }
    if (Array.isArray(message.content)) mix.multimodal++;
    messages.push(message);
  }
  return { messages, mix };
}

/**
 * A conversation as a thread holds it: human and AI messages alternating, about one
 * human turn in ten an autonomous follow-up. Ends with a human message when `count` is
 * odd, so a graph invoked with it answers that message.
 */
export function conversation(count: number, seed: number): BaseMessage[] {
  const next = random(seed);
  const messages: BaseMessage[] = [];
  for (let index = 0; index < count; index++) {
    const messageId = id('conv', seed, index);
    const humanTurn = (count - index) % 2 === 1;
    if (!humanTurn) messages.push(aiMessage(next, messageId));
    else if (next() < 0.1) messages.push(syntheticHuman(next, messageId));
    else messages.push(new HumanMessage({ id: messageId, content: humanContent(next) }));
  }
  return messages;
}

/** The text a person sends in measured turn `index`. */
export function userTurnText(index: number): string {
  return sentence(random(10_000 + index), 40, 160);
}
