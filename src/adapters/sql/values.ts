/**
 * Conversions between API values and column values, the same on both backends.
 */
import { VigilError } from '../../domain/errors.js';

/**
 * Normalise an ISO timestamp to `Date#toISOString()` form before writing it: SQLite
 * compares timestamps as text, so every stored one must have the same shape to sort.
 */
export function isoForDatabase(value: string): string {
  const time = Date.parse(value);
  if (Number.isNaN(time)) throw new VigilError('VALIDATION_FAILED', `invalid timestamp: ${JSON.stringify(value)}`);
  return new Date(time).toISOString();
}

/** A timestamp as read: ISO text (SQLite) or `Date` (pg's timestamptz parser). */
export function isoFromDatabase(value: Date | string): string {
  return typeof value === 'string' ? new Date(value).toISOString() : value.toISOString();
}

export function nullableIsoFromDatabase(value: Date | string | null): string | null {
  return value === null ? null : isoFromDatabase(value);
}

/**
 * JSON as text. `undefined` (which JSON cannot express) is stored as null rather than
 * failing the write.
 */
export function encodeJson(value: unknown): string {
  return JSON.stringify(value) ?? 'null';
}

export function decodeJson(text: string): unknown {
  return JSON.parse(text) as unknown;
}

export function decodeJsonRecord(text: string): Record<string, unknown> {
  const value = decodeJson(text);
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/** Page sizes come from validated requests; this guards the SQL against a caller's slip. */
export function checkLimit(limit: number): number {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new VigilError('VALIDATION_FAILED', `invalid limit: ${limit}`);
  return limit;
}

/** A history row's time as read: epoch milliseconds (SQLite), a Date (pg's timestamptz parser) or its text. */
export function createdAtFromDatabase(value: number | bigint | Date | string | null): string {
  if (value === null) throw new Error('a history row without a time');
  if (typeof value === 'number' || typeof value === 'bigint') return new Date(Number(value)).toISOString();
  return isoFromDatabase(value);
}
