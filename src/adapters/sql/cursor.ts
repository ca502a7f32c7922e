/**
 * Opaque keyset cursors: base64url JSON of the last row's sort key. Clients must treat
 * them as opaque; anything that does not decode to the expected shape is rejected with
 * VALIDATION_FAILED, never passed on to SQL.
 */
import { VigilError } from '../../domain/errors.js';

export interface ThreadCursor {
  updatedAt: string;
  id: string;
}

export interface MessageCursor {
  seq: number;
}

export function encodeThreadCursor(cursor: ThreadCursor): string {
  return encode({ u: cursor.updatedAt, i: cursor.id });
}

export function decodeThreadCursor(cursor: string): ThreadCursor {
  const value = decode(cursor);
  const updatedAt = value.u;
  const id = value.i;
  if (typeof updatedAt !== 'string' || typeof id !== 'string' || Object.keys(value).length !== 2) throw invalidCursor();
  const time = Date.parse(updatedAt);
  // Only our own toISOString() form, so the text comparison on SQLite stays exact.
  if (Number.isNaN(time) || new Date(time).toISOString() !== updatedAt) throw invalidCursor();
  return { updatedAt, id };
}

export function encodeMessageCursor(cursor: MessageCursor): string {
  return encode({ s: cursor.seq });
}

export function decodeMessageCursor(cursor: string): MessageCursor {
  const value = decode(cursor);
  const seq = value.s;
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 0 || Object.keys(value).length !== 1) throw invalidCursor();
  return { seq };
}

function encode(value: Record<string, unknown>): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
}

function decode(cursor: string): Record<string, unknown> {
  // Node's base64 decoder skips characters it does not know; refuse them instead.
  if (typeof cursor !== 'string' || cursor.length === 0 || cursor.length > 1024 || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw invalidCursor();
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch (error) {
    throw invalidCursor(error);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw invalidCursor();
  return value as Record<string, unknown>;
}

function invalidCursor(cause?: unknown): VigilError {
  return new VigilError('VALIDATION_FAILED', 'invalid cursor', cause === undefined ? {} : { cause });
}
