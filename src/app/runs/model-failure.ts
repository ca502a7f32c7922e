import { isVigilError, type ErrorCode } from '../../domain/errors.js';

/**
 * What went wrong with a model call, in vigil's terms: a stable code, a reason a person
 * can read, whether trying again can help, and how long the provider asked us to wait.
 * Recognised by shape (status, headers, error name), not by class: the error may come
 * from the OpenAI or Anthropic SDK, wrapped by LangChain, or from another package copy.
 */
export interface ModelFailure {
  code: ErrorCode;
  reason: string;
  retryable: boolean;
  /** The provider's `retry-after` (or `retry-after-ms`), in milliseconds. */
  retryAfterMs?: number;
}

export function classifyModelFailure(error: unknown, context: { streamed: boolean }): ModelFailure {
  if (isVigilError(error)) return { code: error.code, reason: error.message, retryable: error.status >= 500 };
  // The database refused what the run stores (a checkpoint, its history rows): not the model's
  // doing. Taken for a cut stream, a refusal (bad data) was retried, each try calling the
  // model again for the same refusal; only a passing condition (a lost connection, a busy
  // database, a deadlock) is worth another try.
  const database = databaseErrorOf(error);
  if (database) return { code: 'INTERNAL', reason: `storing the run's progress failed: ${database.message}`, retryable: database.transient };
  const record = (typeof error === 'object' && error !== null ? error : {}) as Record<string, unknown>;
  const status = typeof record.status === 'number' ? record.status : undefined;
  const message = error instanceof Error ? error.message : String(error);
  if (status === 429) {
    const retryAfterMs = retryAfterOf(record.headers);
    return { code: 'MODEL_RATE_LIMITED', reason: `the model server is rate limiting (429)${retryAfterMs !== undefined ? `, retry after ${Math.ceil(retryAfterMs / 1000)} s` : ''}`, retryable: true, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
  }
  if (status !== undefined && status >= 500) return { code: 'MODEL_ERROR', reason: `the model server failed (${status}): ${message}`, retryable: true };
  // Any other answered status (400, 401, 404, …) is the same on every try.
  if (status !== undefined) return { code: 'MODEL_ERROR', reason: `the model server refused the call (${status}): ${message}`, retryable: false };
  if (isTimeout(error)) return { code: 'MODEL_TIMEOUT', reason: `the model did not answer in time: ${message}`, retryable: true };
  if (context.streamed) return { code: 'MODEL_STREAM_CUT', reason: `the model's stream broke off before the reply was complete: ${message}`, retryable: true };
  return { code: 'MODEL_ERROR', reason: `the model call failed: ${message}`, retryable: true };
}

/** SQLSTATE classes of conditions that pass: connection (08), rollback (40: serialization, deadlock), resources (53), operator intervention (57). */
const TRANSIENT_SQLSTATE = /^(08|40|53|57)/;
/** SQLite's BUSY and LOCKED. */
const TRANSIENT_SQLITE = new Set([5, 6]);

/**
 * An error from the database driver, by shape: PostgreSQL's carry a five-character SQLSTATE
 * `code` and a `severity` (pg's DatabaseError), node:sqlite's the code ERR_SQLITE_ERROR
 * and SQLite's own `errcode`.
 */
function databaseErrorOf(error: unknown): { message: string; transient: boolean } | undefined {
  for (let current: unknown = error, depth = 0; current instanceof Error && depth < 4; current = current.cause, depth++) {
    const { code, severity, errcode } = current as { code?: unknown; severity?: unknown; errcode?: unknown };
    if (code === 'ERR_SQLITE_ERROR') return { message: current.message, transient: typeof errcode === 'number' && TRANSIENT_SQLITE.has(errcode & 0xff) };
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && typeof severity === 'string') return { message: current.message, transient: TRANSIENT_SQLSTATE.test(code) };
  }
  return undefined;
}

function isTimeout(error: unknown): boolean {
  for (let current: unknown = error, depth = 0; current instanceof Error && depth < 4; current = current.cause, depth++) {
    if (current.name === 'TimeoutError' || current.name === 'APIConnectionTimeoutError' || /timed? ?out/i.test(current.message)) return true;
  }
  return false;
}

/** `retry-after` in seconds or as an HTTP date, or `retry-after-ms`; undefined when absent or unreadable. */
export function retryAfterOf(headers: unknown, now = Date.now()): number | undefined {
  const read = (name: string): string | null => {
    if (headers && typeof (headers as Headers).get === 'function') return (headers as Headers).get(name);
    if (headers && typeof headers === 'object') {
      const value = (headers as Record<string, unknown>)[name];
      return typeof value === 'string' ? value : null;
    }
    return null;
  };
  const milliseconds = Number(read('retry-after-ms'));
  if (read('retry-after-ms') !== null && Number.isFinite(milliseconds) && milliseconds >= 0) return milliseconds;
  const value = read('retry-after');
  if (value === null || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isFinite(date) ? Math.max(0, date - now) : undefined;
}
