/**
 * Opaque keyset cursors: base64url JSON of the last row's sort key. Clients must treat
 * them as opaque; anything that does not decode to the expected shape is rejected with
 * VALIDATION_FAILED, never passed on to SQL.
 */
import { VigilError } from '../../domain/errors.js';

const MAX_SEQ = 2 ** 31 - 1;
/** Longer than any id vigil makes or accepts. */
const MAX_ID_LENGTH = 256;

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
  const { time: updatedAt, id } = decodeTimeAndId(cursor, 'u');
  return { updatedAt, id };
}

/** A memory in the list (newest first): its creation time and id, the list's sort key. */
export interface MemoryCursor {
  createdAt: string;
  id: string;
}

export function encodeMemoryCursor(cursor: MemoryCursor): string {
  return encode({ m: cursor.createdAt, i: cursor.id });
}

export function decodeMemoryCursor(cursor: string): MemoryCursor {
  const { time: createdAt, id } = decodeTimeAndId(cursor, 'm');
  return { createdAt, id };
}

/** A (timestamp, id) cursor whose time is under `timeKey` (its kind: a thread cursor is not a memory cursor). */
function decodeTimeAndId(cursor: string, timeKey: 'u' | 'm'): { time: string; id: string } {
  const value = decode(cursor);
  const time = value[timeKey];
  const id = value.i;
  if (typeof time !== 'string' || typeof id !== 'string' || Object.keys(value).length !== 2) throw invalidCursor();
  const parsed = Date.parse(time);
  // Only our own toISOString() form, so the text comparison on SQLite stays exact, and a
  // four-digit year from 1 on: toISOString also writes years 0, -271821 and +275760, which
  // PostgreSQL's timestamptz refuses (a 500 where a forged cursor is a 400).
  if (Number.isNaN(parsed) || new Date(parsed).toISOString() !== time || !/^\d{4}-/.test(time) || time.startsWith('0000')) throw invalidCursor();
  if (id.length > MAX_ID_LENGTH || id.includes('\u0000')) throw invalidCursor();
  return { time, id };
}

export function encodeMessageCursor(cursor: MessageCursor): string {
  return encode({ s: cursor.seq });
}

export function decodeMessageCursor(cursor: string): MessageCursor {
  return { seq: decodeSeq(cursor, 's') };
}

/** A plan's tool call, by its seq (its own shape: a message cursor is not one). */
export interface ToolCallCursor {
  seq: number;
}

export function encodeToolCallCursor(cursor: ToolCallCursor): string {
  return encode({ t: cursor.seq });
}

export function decodeToolCallCursor(cursor: string): ToolCallCursor {
  return { seq: decodeSeq(cursor, 't') };
}

/** The seq a cursor of one kind (its only key) holds; any other cursor is refused. */
function decodeSeq(cursor: string, key: 's' | 't'): number {
  const value = decode(cursor);
  const seq = value[key];
  // A seq is a PostgreSQL integer (int4): a larger one is forged.
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 0 || seq > MAX_SEQ || Object.keys(value).length !== 1) throw invalidCursor();
  return seq;
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
