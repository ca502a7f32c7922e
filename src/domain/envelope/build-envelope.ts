import { VigilError } from '../errors.js';
import { redact } from '../redaction.js';
import { jsonStringBytes, jsonStringPrefix, utf8ByteLength } from './utf8.js';

/**
 * The model-visible form of a run's meta (I4, seed 004): one JSON object
 * `{"vigil_meta": {…, "nonce": "<run nonce>"}}`, at most `maxBytes` UTF-8 bytes.
 *
 * The seed system dropped straight to a stub and never redacted; here redaction always
 * runs first, then three stages, each tried only when the previous one is not enough:
 *   1. strings_cut   — long strings are cut, longest first, to a common fair share
 *   2. keys_dropped  — keys are dropped one at a time, least important first (DROP_ORDER)
 *   3. stub          — { trigger, correlation_id (if it fits), truncated: true, truncated_fields (if it fits), nonce }
 * Whenever anything was cut or dropped the envelope says so in its own body, just before
 * the nonce: `"truncated": true` and `"truncated_fields"`, the top-level keys that lost
 * something (bounded; past TRUNCATED_FIELDS_MAX_BYTES a `truncated_fields_more` count).
 * These keys are the server's: a meta key with one of their names is left out.
 * Every change is measured on the serialised envelope (stage 2 by exact arithmetic per
 * dropped entry, confirmed by serialising), so the bound holds exactly, whatever JSON
 * escaping adds.
 *
 * This module only writes JSON. Nothing in vigil reads an envelope back from message
 * content: the envelope message is recognised by server-set metadata (envelope-marker.ts).
 */

/** The envelope's single top-level key. Import it; do not spell it elsewhere in src. */
export const ENVELOPE_KEY = 'vigil_meta';
export const DEFAULT_ENVELOPE_MAX_BYTES = 4096;

/** Never cut and never dropped before the stub: they say why and which run. */
export const PROTECTED_KEYS: readonly string[] = Object.freeze(['trigger', 'correlation_id', 'run_id', 'nonce']);

/**
 * Stage 2 order, least important first. Keys not listed (not in any trigger's schema)
 * go before all of these, largest first. The idea: keep what changes how the model should
 * behave (trigger type, schedule time, priority, chat kind), lose first what is bulky or
 * free-form (payload, reason), then identifiers that only serve tracing (which the
 * protected run_id and correlation_id already allow), then timing detail.
 */
export const DROP_ORDER: readonly string[] = Object.freeze([
  // bulky or free-form detail
  'payload',
  'trigger_reason',
  // identifiers for tracing one delivery; run_id/correlation_id still identify the run
  'delivery_id',
  'fire_id',
  'message_id',
  'timer_id',
  'from_user_id',
  'chat_id',
  // timing detail
  'requested_at_utc',
  'idle_ms',
  // what the run is about
  'plan_id',
  'hook_id',
  'schedule_id',
  // how the model should behave
  'channel',
  'chat_type',
  'priority',
  'scheduled_for_utc',
  'trigger_type',
]);

/** Strings are never cut below this many bytes of their text. */
export const MIN_KEPT_STRING_BYTES = 16;

export type EnvelopeStage = 'full' | 'strings_cut' | 'keys_dropped' | 'stub';

export interface Envelope {
  /** `{"vigil_meta":{…}}`, the content of the envelope message. */
  json: string;
  /** UTF-8 bytes of `json`; never more than the limit. */
  bytes: number;
  stage: EnvelopeStage;
  /** Top-level meta keys left out (stage 2 and the stub), in the order they went. */
  dropped: string[];
  /** Paths of cut strings (stage 1 onwards), e.g. `payload.body`, `tags.2`. */
  cut: string[];
  trigger: string;
  nonce: string;
}

export interface BuildEnvelopeOptions {
  nonce: string;
  maxBytes?: number;
}

/** A run nonce is a non-empty base64url string; anything else is a caller's bug. */
export function assertRunNonce(nonce: unknown): asserts nonce is string {
  if (typeof nonce !== 'string' || !/^[A-Za-z0-9_-]+$/.test(nonce)) throw new VigilError('INTERNAL', 'a run nonce must be a non-empty base64url string');
}

export function truncationMarker(removedBytes: number): string {
  return `…[truncated ${removedBytes} bytes]`;
}

export function buildEnvelope(meta: Record<string, unknown>, options: BuildEnvelopeOptions): Envelope {
  const { nonce } = options;
  const maxBytes = options.maxBytes ?? DEFAULT_ENVELOPE_MAX_BYTES;
  assertRunNonce(nonce);
  if (!Number.isInteger(maxBytes) || maxBytes <= 0) throw new VigilError('INTERNAL', `envelope maxBytes must be a positive integer, got ${maxBytes}`);

  const redacted = redact(meta);
  if (!isRecord(redacted)) throw new VigilError('INTERNAL', 'envelope meta must be an object');
  const trigger = redacted.trigger;
  if (typeof trigger !== 'string' || trigger.length === 0) throw new VigilError('INTERNAL', 'envelope meta must have a string trigger');

  const full = orderedBody(redacted, nonce);
  const fullJson = JSON.stringify({ [ENVELOPE_KEY]: full });
  const fullBytes = utf8ByteLength(fullJson);
  if (fullBytes <= maxBytes) return { json: fullJson, bytes: fullBytes, stage: 'full', dropped: [], cut: [], trigger, nonce };

  // Something has to go, and the envelope must say so (`truncated: true` and which
  // fields, as the system prompt promises the model). The notice takes room itself, so
  // the cutting is done to a budget that leaves room for it; a notice larger than the
  // room left (more fields went than guessed) shrinks the budget and the cut is redone
  // on a fresh copy. The last try reserves the notice's largest possible size, so it
  // always fits.
  let reserve = truncationNoticeBytes([]);
  for (let attempt = 0; attempt < 4; attempt++) {
    const last = attempt === 3;
    if (last) reserve = TRUNCATION_NOTICE_MAX_BYTES;
    const fitted = fitBody(structuredClone(redacted), nonce, maxBytes - reserve);
    if (fitted === undefined) break;
    const fields = truncatedFields(fitted.dropped, fitted.cut);
    const json = JSON.stringify({ [ENVELOPE_KEY]: withNotice(fitted.body, fields) });
    const bytes = utf8ByteLength(json);
    if (bytes <= maxBytes) return { json, bytes, stage: fitted.stage, dropped: fitted.dropped, cut: fitted.cut, trigger, nonce };
    reserve = Math.max(reserve + 1, truncationNoticeBytes(fields));
  }

  return buildStub(redacted, trigger, nonce, maxBytes);
}

interface FittedBody {
  body: Record<string, unknown>;
  stage: 'strings_cut' | 'keys_dropped';
  dropped: string[];
  cut: string[];
}

// Stages 1 and 2 to `budget` bytes; undefined when only the stub is left.
function fitBody(redacted: Record<string, unknown>, nonce: string, budget: number): FittedBody | undefined {
  const body = orderedBody(redacted, nonce);
  const envelope = { [ENVELOPE_KEY]: body };
  let bytes = 0;
  const measure = (): number => {
    bytes = utf8ByteLength(JSON.stringify(envelope));
    return bytes;
  };
  measure();
  const cut = cutStrings(body, budget, bytes, measure);
  if (measure() <= budget) return { body, stage: 'strings_cut', dropped: [], cut: cutPaths(cut) };

  // Stage 2. Serialising a many-keyed object after every drop is quadratic (and slow on
  // objects V8 keeps as dictionaries), so each drop subtracts the exact bytes it removes
  // (`"key":value` and one comma; the nonce always stays, so there is always a comma),
  // and a real serialisation confirms the result before it is returned.
  const dropped: string[] = [];
  for (const { key, entryBytes } of dropSequence(body)) {
    delete body[key];
    dropped.push(key);
    bytes -= entryBytes + 1;
    if (bytes > budget) continue;
    if (measure() <= budget) return { body, stage: 'keys_dropped', dropped, cut: cutPaths(cut.filter((leaf) => Object.hasOwn(body, leaf.top))) };
  }
  return undefined;
}

/** Keys the server sets on a truncated envelope; a meta key of the same name is left out. */
export const TRUNCATION_KEYS: readonly string[] = Object.freeze(['truncated', 'truncated_fields', 'truncated_fields_more']);
/** The list of truncated fields is itself bounded; past it the envelope gives a count. */
export const TRUNCATED_FIELDS_MAX_BYTES = 512;

/**
 * The top-level meta keys that lost something (a cut string inside, or dropped), in the
 * order they went: cut ones first, then dropped ones. Top-level keys, not deep paths:
 * the model needs to know which part of its context is incomplete, and the names stay
 * short and bounded.
 */
function truncatedFields(dropped: readonly string[], cut: readonly string[]): string[] {
  const fields: string[] = [];
  for (const path of cut) {
    const top = path.split('.')[0] ?? path;
    if (!fields.includes(top)) fields.push(top);
  }
  for (const key of dropped) if (!fields.includes(key)) fields.push(key);
  return fields;
}

interface TruncationNotice {
  truncated: true;
  truncated_fields: string[];
  truncated_fields_more?: number;
}

function truncationNotice(fields: readonly string[]): TruncationNotice {
  const listed: string[] = [];
  let listBytes = 2; // the brackets
  for (const field of fields) {
    const entryBytes = jsonStringBytes(field) + 2 + (listed.length > 0 ? 1 : 0);
    if (listBytes + entryBytes > TRUNCATED_FIELDS_MAX_BYTES) break;
    listed.push(field);
    listBytes += entryBytes;
  }
  const notice: TruncationNotice = { truncated: true, truncated_fields: listed };
  if (listed.length < fields.length) notice.truncated_fields_more = fields.length - listed.length;
  return notice;
}

// Bytes the notice adds to a body: its entries and their commas.
function truncationNoticeBytes(fields: readonly string[]): number {
  return utf8ByteLength(JSON.stringify(truncationNotice(fields))) - 2 + 1;
}

// The largest notice: a full list and a count of up to 15 digits.
const TRUNCATION_NOTICE_MAX_BYTES =
  utf8ByteLength(JSON.stringify({ truncated: true, truncated_fields: [], truncated_fields_more: Number.MAX_SAFE_INTEGER })) - 2 + 1 + TRUNCATED_FIELDS_MAX_BYTES;

// The notice goes just before the nonce, which stays last.
function withNotice(body: Record<string, unknown>, fields: readonly string[]): Record<string, unknown> {
  const { nonce, ...rest } = body;
  const noticed: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(rest)) setOwn(noticed, key, value);
  Object.assign(noticed, truncationNotice(fields));
  noticed.nonce = nonce;
  return noticed;
}

// Protected keys first, the nonce last: the server's key is where a reader looks for it,
// and a meta key called "nonce" never replaces it.
function orderedBody(meta: Record<string, unknown>, nonce: string): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const key of PROTECTED_KEYS) if (key !== 'nonce' && Object.hasOwn(meta, key)) body[key] = meta[key];
  for (const [key, value] of Object.entries(meta)) {
    if (!Object.hasOwn(body, key) && key !== 'nonce' && !TRUNCATION_KEYS.includes(key)) setOwn(body, key, value);
  }
  body.nonce = nonce;
  return body;
}

interface StringLeaf {
  /** The top-level meta key the string sits under. */
  top: string;
  container: Record<string, unknown> | unknown[];
  key: string | number;
  path: string;
  original: string;
  /** Sizes are JSON-escaped UTF-8 bytes, what the string costs in the envelope. */
  originalBytes: number;
  /** Bytes of the original text currently kept. */
  kept: number;
  originalUtf8Bytes: number;
  /** Digits of the largest number a marker for this string can show. */
  markerDigits: number;
}

/**
 * Stage 1. Water-filling: find the largest cap C such that cutting every string longer
 * than C down to C (plus its marker) saves at least the excess; strings shorter than C
 * are untouched, so the longest go first and all cut strings end up with the same share.
 * Sizes are counted as JSON writes them (escapes included); the marker estimate can be
 * a digit off, so the loop measures again and lowers the cap until the envelope fits or
 * nothing is left to cut.
 */
function cutStrings(body: Record<string, unknown>, maxBytes: number, initialBytes: number, measure: () => number): StringLeaf[] {
  const leaves: StringLeaf[] = [];
  for (const [key, value] of Object.entries(body)) {
    if (!PROTECTED_KEYS.includes(key)) collectStrings(key, body, key, value, key, leaves);
  }
  const cut = new Set<StringLeaf>();
  for (let round = 0, bytes = initialBytes; round < 32; round++, bytes = measure()) {
    const excess = bytes - maxBytes;
    if (excess <= 0) break;
    const cap = fairShare(leaves, excess);
    if (cap === undefined) break;
    for (const leaf of leaves) {
      if (saving(leaf, cap) <= 0) continue;
      const prefix = jsonStringPrefix(leaf.original, cap);
      leaf.kept = jsonStringBytes(prefix);
      // The marker tells a reader how much text went, in plain UTF-8 bytes.
      const removed = leaf.originalUtf8Bytes - utf8ByteLength(prefix);
      (leaf.container as Record<string | number, unknown>)[leaf.key] = prefix + truncationMarker(removed);
      cut.add(leaf);
    }
  }
  return [...cut];
}

function cutPaths(leaves: readonly StringLeaf[]): string[] {
  return leaves.map((leaf) => leaf.path);
}

function collectStrings(
  top: string,
  container: Record<string, unknown> | unknown[],
  key: string | number,
  value: unknown,
  path: string,
  leaves: StringLeaf[],
): void {
  if (typeof value === 'string') {
    const bytes = jsonStringBytes(value);
    const utf8Bytes = utf8ByteLength(value);
    leaves.push({ top, container, key, path, original: value, originalBytes: bytes, kept: bytes, originalUtf8Bytes: utf8Bytes, markerDigits: String(utf8Bytes).length });
  } else if (Array.isArray(value)) {
    value.forEach((item, index) => collectStrings(top, value, index, item, `${path}.${index}`, leaves));
  } else if (isRecord(value)) {
    for (const [childKey, child] of Object.entries(value)) collectStrings(top, value, childKey, child, `${path}.${childKey}`, leaves);
  }
}

// Bytes saved by cutting `leaf` to `cap` kept bytes (negative or zero: not worth it).
function saving(leaf: StringLeaf, cap: number): number {
  if (leaf.kept <= cap) return 0;
  const marker = markerBytes(leaf.markerDigits);
  const markerNow = leaf.kept < leaf.originalBytes ? marker : 0;
  return leaf.kept - cap + markerNow - marker;
}

const MARKER_BYTES_WITHOUT_DIGITS = jsonStringBytes(truncationMarker(0)) - 1;

function markerBytes(digits: number): number {
  return MARKER_BYTES_WITHOUT_DIGITS + digits;
}

function totalSaving(leaves: readonly StringLeaf[], cap: number): number {
  let total = 0;
  for (const leaf of leaves) total += Math.max(0, saving(leaf, cap));
  return total;
}

// The largest cap that saves `excess` bytes, or the smallest allowed cap when none does;
// undefined when no cut saves anything at all.
function fairShare(leaves: readonly StringLeaf[], excess: number): number | undefined {
  let low = MIN_KEPT_STRING_BYTES;
  if (totalSaving(leaves, low) <= 0) return undefined;
  let high = leaves.reduce((longest, leaf) => Math.max(longest, leaf.kept), low);
  if (totalSaving(leaves, low) < excess) return low;
  // Invariant: totalSaving(low) >= excess; totalSaving is non-increasing in the cap.
  while (high - low > 1) {
    const middle = Math.floor((low + high) / 2);
    if (totalSaving(leaves, middle) >= excess) low = middle;
    else high = middle;
  }
  return low;
}

// Stage 2 candidates in order: unknown keys largest first, then DROP_ORDER.
function dropSequence(body: Record<string, unknown>): Array<{ key: string; entryBytes: number }> {
  const entries = Object.keys(body)
    .filter((key) => !PROTECTED_KEYS.includes(key))
    .map((key) => ({ key, entryBytes: jsonStringBytes(key) + 3 + utf8ByteLength(JSON.stringify(body[key])) })); // quotes and colon
  const unknown = entries
    .filter(({ key }) => !DROP_ORDER.includes(key))
    .sort((a, b) => b.entryBytes - a.entryBytes || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const known = DROP_ORDER.flatMap((key) => entries.filter((entry) => entry.key === key));
  return [...unknown, ...known];
}

function buildStub(meta: Record<string, unknown>, trigger: string, nonce: string, maxBytes: number): Envelope {
  const correlationId = meta.correlation_id;
  const hasCorrelation = correlationId !== undefined && correlationId !== null;
  const droppedFrom = (kept: Record<string, unknown>) => Object.keys(meta).filter((key) => !Object.hasOwn(kept, key) && !TRUNCATION_KEYS.includes(key));
  // Most informative first: with the list of what went, then without it.
  const cores: Array<Record<string, unknown>> = hasCorrelation ? [{ trigger, correlation_id: correlationId }, { trigger }] : [{ trigger }];
  const attempts: Array<Record<string, unknown>> = [];
  for (const core of cores) attempts.push({ ...core, ...truncationNotice(droppedFrom(core)), nonce });
  for (const core of cores) attempts.push({ ...core, truncated: true, nonce });
  for (const stub of attempts) {
    const json = JSON.stringify({ [ENVELOPE_KEY]: stub });
    const bytes = utf8ByteLength(json);
    if (bytes > maxBytes) continue;
    return { json, bytes, stage: 'stub', dropped: droppedFrom(stub), cut: [], trigger, nonce };
  }
  // Only a huge trigger or nonce, or a tiny limit, gets here: a caller's bug, not data.
  throw new VigilError('INTERNAL', `envelope stub does not fit in ${maxBytes} bytes`);
}

function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
