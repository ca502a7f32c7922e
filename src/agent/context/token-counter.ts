import { AIMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { Tiktoken } from 'js-tiktoken/lite';
import cl100kBase from 'js-tiktoken/ranks/cl100k_base';
import { getSchemaDescription, type InteropZodType } from '@langchain/core/utils/types';
import { toJsonSchema } from '@langchain/core/utils/json_schema';

/**
 * Token counts for fitting model calls (I14), from a tokenizer whose ranks ship inside
 * the npm package: nothing is downloaded at run time (LangChain's `getNumTokens` fetches
 * its encodings from the internet and, offline, silently falls back to a guess).
 *
 * cl100k_base is one fixed tokenizer for every provider: other tokenizers differ by some
 * percent, which the provider's reported usage corrects (usage-calibration.ts). It
 * builds in ~0.5 s where o200k_base takes ~1.5 s, for a count that is corrected anyway.
 */

/** What one image block is counted as: above a 1 MP image on OpenAI (765) and Anthropic (~1,600). */
export const IMAGE_TOKENS = 1_600;
/** Per-message framing of chat formats (role, separators). */
const MESSAGE_OVERHEAD = 4;
export const MEDIA_PLACEHOLDER = '[image left out to fit the context budget]';

// The encoder is immutable once built and costs half a second to build: one per process
// is a cache of a pure function, not shared mutable state.
let sharedEncoder: Tiktoken | undefined;
function encoder(): Tiktoken {
  sharedEncoder ??= new Tiktoken(cl100kBase);
  return sharedEncoder;
}

/**
 * The token count of a text, exactly `encoder().encode(text, [], []).length`, with the
 * byte-pair encoding of each piece remembered.
 *
 * Why: a turn counts its system prompt (rules, the run's nonce, the summary, recalled
 * memories) afresh, because the nonce and the memories make it a new text every turn;
 * byte-pair encoding was the largest part of a turn's CPU. The encoder first splits a
 * text into pieces with its pattern (words, numbers, punctuation, whitespace) and
 * encodes each piece on its own, so the count is the sum of the pieces' counts; a piece
 * seen before costs a map lookup. (Special-token text is plain text here: with nothing
 * allowed or disallowed, the encoder never splits at it.) A piece whose own split is not
 * itself (the pattern's lookahead read past it) is never cached: the text is then
 * counted whole.
 */
const piecePattern = new RegExp(cl100kBase.pat_str, 'gu');
const pieceCounts = new Map<string, number>();
const MAX_PIECES = 100_000;

function countText(text: string): number {
  return text.length < SEGMENTED_MIN_LENGTH ? countPieces(text) : countSegments(text);
}

/**
 * A long text counted paragraph by paragraph, each paragraph's count remembered.
 *
 * Why: a call's system prompt is a new text every turn (the run's nonce, recalled memories)
 * but mostly the same paragraphs (the agent's prompt, the rules); scanning it piece by
 * piece was the larger part of fitting a turn's context. A text splits into exactly the
 * same pieces on either side of a run of line breaks followed by a character that is not
 * whitespace: no piece of the pattern reads past such a run (line breaks end the piece
 * they are in, and a piece never starts with one and goes on to a letter), so the count
 * is the sum of the segments' counts.
 */
const SEGMENTED_MIN_LENGTH = 200;
const SEGMENT_CACHE_MIN_LENGTH = 48;
const SEGMENT_END = /[\r\n]+(?=\S)/g;
const segmentCounts = new Map<string, number>();
const MAX_SEGMENTS = 4_096;

function countSegments(text: string): number {
  let total = 0;
  let start = 0;
  for (const match of text.matchAll(SEGMENT_END)) {
    const end = match.index + match[0].length;
    total += countSegment(text.slice(start, end));
    start = end;
  }
  return total + countSegment(text.slice(start));
}

function countSegment(segment: string): number {
  if (segment.length < SEGMENT_CACHE_MIN_LENGTH) return countPieces(segment);
  let count = segmentCounts.get(segment);
  if (count === undefined) {
    count = countPieces(segment);
    if (segmentCounts.size >= MAX_SEGMENTS) segmentCounts.delete(segmentCounts.keys().next().value!);
    segmentCounts.set(segment, count);
  }
  return count;
}

function countPieces(text: string): number {
  let total = 0;
  for (const match of text.matchAll(piecePattern)) {
    const piece = match[0];
    let count = pieceCounts.get(piece);
    if (count === undefined) {
      if (piece.length > LONG_PIECE) count = chunksOf(piece).reduce((sum, chunk) => sum + countPieces(chunk), 0);
      else if (!isOnePiece(piece)) return encodeBounded(text).length;
      else count = pieceTokens(piece);
      if (pieceCounts.size >= MAX_PIECES) pieceCounts.clear();
      pieceCounts.set(piece, count);
    }
    total += count;
  }
  return total;
}

/**
 * The tokens of one piece of the encoder's split: the count `encoder().encode(piece)` gives,
 * by the same byte-pair merges over the same ranks (the lowest-ranked adjacent pair merged
 * first, the leftmost of equals), counted without building the tokens.
 *
 * Why: every turn brings pieces never seen before (the run's nonce and ids in its envelope,
 * a person's names and numbers), and js-tiktoken spent about 0.1 ms on each: every encode()
 * compiles two regular expressions and builds two sets, and its merge re-slices and re-joins
 * the bytes of every adjacent pair after every merge. Here each pair's rank is looked up once,
 * and again only for the two pairs a merge changes.
 */
function pieceTokens(piece: string): number {
  const ranks = rankMap();
  if (ranks === undefined) return encoder().encode(piece, [], []).length;
  const bytes = utf8.encode(piece);
  if (bytes.length <= 1) return bytes.length;
  // A part is named as the encoder's ranks name byte sequences: its bytes, joined by commas.
  const parts = Array.from(bytes, String);
  if (ranks.has(parts.join(','))) return 1;
  const pairRank = (left: number) => ranks.get(`${parts[left]},${parts[left + 1]}`) ?? Infinity;
  const pairRanks = parts.slice(1).map((_, left) => pairRank(left));
  for (;;) {
    let best = -1;
    let lowest = Infinity;
    for (let left = 0; left < pairRanks.length; left++) {
      if (pairRanks[left]! < lowest) {
        lowest = pairRanks[left]!;
        best = left;
      }
    }
    if (best < 0) return parts.length;
    parts.splice(best, 2, `${parts[best]},${parts[best + 1]}`);
    pairRanks.splice(best, 1);
    if (best > 0) pairRanks[best - 1] = pairRank(best - 1);
    if (best < pairRanks.length) pairRanks[best] = pairRank(best);
  }
}

const utf8 = new TextEncoder();

/**
 * The encoder's ranks by byte sequence ("104,101" → rank), the map its own encode() reads.
 * js-tiktoken marks the field internal; if a release renames it, counting falls back to
 * encode() (slower, the same counts), and the token-counter tests still compare with it.
 */
function rankMap(): Map<string, number> | undefined {
  const ranks = (encoder() as unknown as { rankMap?: unknown }).rankMap;
  return ranks instanceof Map ? (ranks as Map<string, number>) : undefined;
}

/**
 * Pieces longer than this are encoded in chunks of CHUNK characters.
 *
 * Why: js-tiktoken's byte-pair merge takes time that grows with the square of a piece's
 * length, and blocks the event loop: an unbroken run of letters (CJK text without
 * punctuation, a repeated letter, a long token-like string) of 8,000 characters took 4.5 s
 * (x) to 33 s (CJK), and the 100,000 characters a message may hold about an hour. Encoded
 * in chunks, a run costs time in proportion to its length (100,000 CJK characters: ~0.4 s;
 * `npx tsx bench/token-count-runs.ts` prints it). A chunk boundary can only lose a merge
 * across it, so such a run may count a token more per chunk than the encoder would: an
 * over-count, which fits a model call more tightly, never over its budget, and which the
 * provider's reported usage corrects. Words, numbers and code are far shorter than this
 * and keep their exact count.
 */
export const LONG_PIECE = 48;
const CHUNK = 16;

/** The piece in chunks of CHUNK code points (a surrogate pair is never split). */
function chunksOf(piece: string): string[] {
  const chunks: string[] = [];
  let chunk = '';
  let points = 0;
  for (const point of piece) {
    chunk += point;
    if (++points === CHUNK) {
      chunks.push(chunk);
      chunk = '';
      points = 0;
    }
  }
  if (chunk !== '') chunks.push(chunk);
  return chunks;
}

/** The encoder's tokens of a text, exactly, unless it holds a piece longer than LONG_PIECE: that piece's are its chunks'. */
function encodeBounded(text: string): number[] {
  const pieces = Array.from(text.matchAll(piecePattern), (match) => match[0]);
  if (pieces.every((piece) => piece.length <= LONG_PIECE)) return encoder().encode(text, [], []);
  return pieces.flatMap((piece) => (piece.length <= LONG_PIECE ? [piece] : chunksOf(piece)).flatMap((part) => encoder().encode(part, [], [])));
}

function isOnePiece(piece: string): boolean {
  const pattern = new RegExp(cl100kBase.pat_str, 'u');
  const match = pattern.exec(piece);
  return match !== null && match.index === 0 && match[0] === piece;
}

/** Texts this long or longer are remembered whole, the last RECENT_TEXTS of them. */
const RECENT_TEXT_MIN_LENGTH = 256;
const RECENT_TEXTS = 16;

export interface MessageTokens {
  tokens: number;
  /** With media parts replaced by the placeholder; absent when the message has none. */
  tokensWithoutMedia?: number;
}

/** A tool as a model call binds it (its JSON takes input tokens at the provider). */
export interface ToolSchema {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** Tokens a provider wraps each tool definition in (type, function, keys). */
const TOOL_FRAMING_TOKENS = 8;
const TOOLSETS = 64;

export class TokenCounter {
  /** Counts of stored messages by id: a message in a checkpoint does not change under its id. */
  private readonly cache = new Map<string, MessageTokens & { key: string }>();
  /** Counts of the last long texts, whole (see text()). */
  private readonly recentTexts = new Map<string, number>();
  /** Counts of message objects seen before, with the content they were counted for. */
  private readonly byObject = new WeakMap<BaseMessage, { content: unknown; counted: MessageTokens }>();

  /** Counts of toolsets (the JSON of their definitions): an agent's tools rarely change between calls. */
  private readonly toolsets = new Map<string, number>();

  /** Counts of structured decisions' output schemas, per schema object and name (a decision's schema is a module constant). */
  private readonly outputSchemas = new WeakMap<object, Map<string, number>>();

  constructor(private readonly cacheSize = 20_000) {}

  /**
   * What a structured decision's output schema takes of its input: withStructuredOutput
   * binds it as one tool (the decision's name, the schema's description, its JSON schema),
   * which providers send with the messages. Counted as tools() counts a chat call's tools;
   * cached per schema.
   */
  outputSchema(name: string, schema: InteropZodType): number {
    let byName = this.outputSchemas.get(schema);
    let count = byName?.get(name);
    if (count === undefined) {
      count = this.tools([{ name, description: getSchemaDescription(schema) ?? 'A function available to call.', parameters: toJsonSchema(schema) as Record<string, unknown> }]);
      if (!byName) this.outputSchemas.set(schema, (byName = new Map()));
      byName.set(name, count);
    }
    return count;
  }

  /**
   * What a call's bound tools take of its input: each tool's name, description and
   * parameters schema as JSON, as providers send them, plus a few tokens of framing per
   * tool. Cached per toolset.
   */
  tools(tools: readonly ToolSchema[]): number {
    if (tools.length === 0) return 0;
    const key = JSON.stringify(tools.map(({ name, description, parameters }) => ({ name, description, parameters })));
    let count = this.toolsets.get(key);
    if (count === undefined) {
      count = tools.reduce((sum, { name, description, parameters }) => sum + TOOL_FRAMING_TOKENS + countText(JSON.stringify({ name, description, parameters })), 0);
      if (this.toolsets.size >= TOOLSETS) this.toolsets.delete(this.toolsets.keys().next().value!);
      this.toolsets.set(key, count);
    }
    return count;
  }

  text(text: string): number {
    if (text.length === 0) return 0;
    if (text.length < RECENT_TEXT_MIN_LENGTH) return countText(text);
    // A call's system prompt is counted several times while its input is fitted (alone,
    // with the summary, in the final input): the last few long texts are remembered whole.
    let count = this.recentTexts.get(text);
    if (count === undefined) {
      count = countText(text);
      if (this.recentTexts.size >= RECENT_TEXTS) this.recentTexts.delete(this.recentTexts.keys().next().value!);
      this.recentTexts.set(text, count);
    }
    return count;
  }

  /** The first `maxTokens` tokens of a text. */
  truncate(text: string, maxTokens: number): string {
    const tokens = encodeBounded(text);
    if (tokens.length <= maxTokens) return text;
    let cut = encoder().decode(tokens.slice(0, Math.max(0, maxTokens)));
    // A token can end inside a character's bytes (an emoji is several): drop the partial character.
    while (cut.endsWith('\uFFFD') && !text.startsWith(cut)) cut = cut.slice(0, -1);
    return cut;
  }

  message(message: BaseMessage): MessageTokens {
    // The same message object, turn after turn (a checkpoint read hands back the same
    // instances): no key to build. Its content is compared by reference, so a message
    // whose content was replaced is counted again.
    const seen = this.byObject.get(message);
    if (seen !== undefined && seen.content === message.content) return seen.counted;
    const counted = this.byId(message);
    this.byObject.set(message, { content: message.content, counted });
    return counted;
  }

  private byId(message: BaseMessage): MessageTokens {
    const key = `${message.getType()}:${contentSize(message.content)}`;
    const cached = message.id ? this.cache.get(message.id) : undefined;
    if (cached && cached.key === key) return cached;
    const counted = this.countMessage(message);
    if (message.id) {
      if (this.cache.size >= this.cacheSize) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(message.id, { ...counted, key });
    }
    return counted;
  }

  private countMessage(message: BaseMessage): MessageTokens {
    let fixed = MESSAGE_OVERHEAD;
    if (message.name) fixed += this.text(message.name);
    if (AIMessage.isInstance(message) && message.tool_calls?.length) {
      for (const call of message.tool_calls) fixed += MESSAGE_OVERHEAD + this.text(`${call.name}${JSON.stringify(call.args)}${call.id ?? ''}`);
    }
    if (ToolMessage.isInstance(message)) fixed += this.text(message.tool_call_id);
    const content = message.content as unknown;
    if (typeof content === 'string') return { tokens: fixed + this.text(content) };
    if (!Array.isArray(content)) return { tokens: fixed };
    let tokens = fixed;
    let withoutMedia = fixed;
    let media = false;
    for (const block of content as unknown[]) {
      if (typeof block === 'string') {
        const count = this.text(block);
        tokens += count;
        withoutMedia += count;
      } else if (isMediaBlock(block)) {
        media = true;
        tokens += IMAGE_TOKENS;
        withoutMedia += this.text(MEDIA_PLACEHOLDER);
      } else {
        const record = block as Record<string, unknown>;
        const count = typeof record.text === 'string' ? this.text(record.text) : this.text(JSON.stringify(block) ?? '');
        tokens += count;
        withoutMedia += count;
      }
    }
    return media ? { tokens, tokensWithoutMedia: withoutMedia } : { tokens };
  }
}

export function isMediaBlock(block: unknown): boolean {
  if (!block || typeof block !== 'object') return false;
  const type = (block as { type?: unknown }).type;
  return type === 'image_url' || type === 'image' || type === 'file' || type === 'audio' || type === 'input_audio' || type === 'video';
}

/** A cheap fingerprint of content: a copy with media replaced or text cut never shares a count with its original. */
function contentSize(content: unknown): string {
  if (typeof content === 'string') return String(content.length);
  if (!Array.isArray(content)) return '0';
  return content.map((block) => (typeof block === 'string' ? `s${block.length}` : `${String((block as { type?: unknown }).type)}${String((block as { text?: unknown }).text ?? '').length}`)).join(',');
}
