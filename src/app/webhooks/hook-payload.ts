import { WEBHOOK_PAYLOAD_MAX_KEYS } from '../../domain/envelope/run-meta.js';
import { VigilError } from '../../domain/errors.js';
import { PAYLOAD_PATH_MAX_CHARS, cut } from './hook-template.js';

/**
 * A delivery's JSON payload → the bounded, flat fields a run's meta may carry (the
 * webhook meta schema: at most 32 keys, scalar values, strings ≤ 1024 characters).
 *
 * Nested objects become dotted paths (`repository.full_name`); arrays and keys that are
 * not plain `[A-Za-z0-9_-]` words are left out (a dotted path must mean one thing). With
 * the hook's `payloadFields` only those paths are taken, in that order; without, the
 * first 32 scalar fields in document order. Long strings are cut, never refused: the
 * sender cannot shorten its events. Nothing here is evaluated; values are data.
 */

const MAX_DEPTH = 4;
/** Bounds the walk, whatever the payload's shape (the body limit bounds its size). */
const MAX_VISITED = 2000;
export const PAYLOAD_STRING_MAX_CHARS = 1000;

export type PayloadValue = string | number | boolean | null;

const KEY = /^[A-Za-z0-9_-]+$/;

export function mapPayload(payload: unknown, fields: readonly string[] | null): Record<string, PayloadValue> {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    throw new VigilError('VALIDATION_FAILED', 'the webhook payload must be a JSON object');
  }
  const flat = new Map<string, PayloadValue>();
  let visited = 0;
  const walk = (value: Record<string, unknown>, prefix: string, depth: number): void => {
    for (const key of Object.keys(value)) {
      if (++visited > MAX_VISITED) return;
      if (!KEY.test(key) || key === '__proto__') continue;
      const path = prefix === '' ? key : `${prefix}.${key}`;
      if (path.length > PAYLOAD_PATH_MAX_CHARS) continue;
      const item = value[key];
      const scalar = toScalar(item);
      if (scalar !== undefined) flat.set(path, scalar);
      else if (isPlainObject(item) && depth < MAX_DEPTH) walk(item, path, depth + 1);
    }
  };
  walk(payload as Record<string, unknown>, '', 1);

  const chosen = fields === null ? [...flat.keys()].slice(0, WEBHOOK_PAYLOAD_MAX_KEYS) : fields.filter((path) => flat.has(path));
  // Built on a null-prototype object so that no key can touch Object.prototype.
  const result = Object.create(null) as Record<string, PayloadValue>;
  for (const path of chosen) result[path] = flat.get(path) as PayloadValue;
  return { ...result };
}

function toScalar(value: unknown): PayloadValue | undefined {
  if (value === null || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value === 'string') return cut(value, PAYLOAD_STRING_MAX_CHARS);
  return undefined;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
