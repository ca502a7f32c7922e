import { VigilError } from '../domain/errors.js';

/**
 * Whether any string in a request's parsed params, query or body (keys included) holds
 * U+0000. PostgreSQL's text cannot store it (SQLite can), so without a check at the door
 * the same request was a 500 on one database and stored on the other, or, in a person's
 * message, failed only when the run stored its history: after the model had answered.
 * No id, name or message of vigil's needs the character.
 */
export function containsNul(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const current = pending.pop();
    if (typeof current === 'string') {
      if (current.includes('\u0000')) return true;
    } else if (Array.isArray(current)) {
      // One push per item: spreading a long array into push's arguments overflows the stack
      // (RangeError past roughly 120,000 items, well within the body limit).
      for (const item of current) pending.push(item);
    } else if (typeof current === 'object' && current !== null) {
      for (const [key, item] of Object.entries(current)) {
        if (key.includes('\u0000')) return true;
        pending.push(item);
      }
    }
  }
  return false;
}

/** Refuses a request (HTTP or a WebSocket frame) any of whose values holds U+0000: 400 VALIDATION_FAILED, before anything is written. */
export function refuseNul(...values: unknown[]): void {
  if (values.some(containsNul)) throw new VigilError('VALIDATION_FAILED', 'text may not contain the NUL character (U+0000)');
}
