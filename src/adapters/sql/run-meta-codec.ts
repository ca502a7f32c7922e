/**
 * How a run's row holds its meta: without the four core keys when the row's own columns
 * give them back.
 *
 * Why: every run's meta starts with `trigger`, `run_id`, `requested_at_utc` and
 * `correlation_id` (app/run-meta.ts), copies of the row's trigger, id, requested_at and
 * correlation_id columns: a user run's meta is 168 bytes of which 166 are those copies,
 * written for every turn (issue 10's bytes-per-turn target). A compact row
 * (`meta_core_omitted = 1`, migration 26) holds the other keys alone; reading it puts the
 * core keys back first, in their order, from the columns.
 *
 * RunRecord.meta is returned by the API, so it must come back bit for bit (I3): a meta is
 * stored compact only when reading the compact row gives exactly the object that reading the
 * whole JSON would (same keys, values and order; encodeRunMeta checks by decoding). A core
 * key that differs from its column, core keys not first or not in this order, a value a text
 * column could alter: the meta is stored whole (`meta_core_omitted = 0`), as every row written
 * before migration 26 was, and read as it always was. Every read of `runs.meta` goes through
 * decodeRunMeta.
 */
import type { Selectable } from 'kysely';
import type { RunsTable } from './database.js';
import { decodeJson, decodeJsonRecord, encodeJson, isoFromDatabase } from './values.js';

/**
 * The core keys as a compact row rebuilds them, first and in this order. A storage format:
 * never change it (compact rows already written depend on it). If the meta's own order
 * changes, metas are simply stored whole.
 */
const CORE_KEYS = ['trigger', 'run_id', 'requested_at_utc', 'correlation_id'] as const;

/** The columns a read of a run's meta needs: select these wherever `runs.meta` is read. */
export const RUN_META_COLUMNS = ['meta', 'meta_core_omitted', 'trigger', 'id', 'requested_at', 'correlation_id'] as const;

type StoredRow = Pick<Selectable<RunsTable>, (typeof RUN_META_COLUMNS)[number]>;
/** The columns a compact meta is rebuilt from, as they are written. */
type CoreColumns = Pick<StoredRow, 'trigger' | 'id' | 'requested_at' | 'correlation_id'>;

/** What the row stores: the meta column and its flag. */
export interface StoredRunMeta {
  meta: string;
  meta_core_omitted: 0 | 1;
}

/** The shape `isoForDatabase` writes and both backends read back unchanged (a four-digit year). */
const DATABASE_ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** The meta column and its flag for a new row whose other columns are `columns`. */
export function encodeRunMeta(meta: Record<string, unknown>, columns: CoreColumns): StoredRunMeta {
  const whole: StoredRunMeta = { meta: encodeJson(meta), meta_core_omitted: 0 };
  // What a whole row reads back as; a compact row must read back as exactly this.
  const read = decodeJson(whole.meta);
  if (!isRecord(read) || !columnsRoundTrip(columns)) return whole;
  const entries = Object.entries(read);
  const core = coreOf(columns);
  for (const [index, key] of CORE_KEYS.entries()) {
    const entry = entries[index];
    if (entry === undefined || entry[0] !== key || entry[1] !== core[key]) return whole;
  }
  // fromEntries, not assignment: an own "__proto__" key stays a key.
  const compact: StoredRunMeta = { meta: encodeJson(Object.fromEntries(entries.slice(CORE_KEYS.length))), meta_core_omitted: 1 };
  // Integer-like keys ("0") always come first in an object, so they could not follow the
  // core keys once rebuilt: the check above already refuses them, and this catches anything else.
  return JSON.stringify(decodeRunMeta({ ...columns, ...compact })) === JSON.stringify(read) ? compact : whole;
}

/** A row's meta as the API returns it: the JSON as stored, or, for a compact row, the core keys from the columns and then the JSON's keys. */
export function decodeRunMeta(row: StoredRow): Record<string, unknown> {
  const rest = decodeJsonRecord(row.meta);
  return Number(row.meta_core_omitted) === 1 ? { ...coreOf(row), ...rest } : rest;
}

function coreOf(columns: CoreColumns): Record<(typeof CORE_KEYS)[number], string> {
  return { trigger: columns.trigger, run_id: columns.id, requested_at_utc: isoFromDatabase(columns.requested_at), correlation_id: columns.correlation_id };
}

/**
 * The columns are text: a lone surrogate is written to PostgreSQL as U+FFFD, and a NUL is
 * refused there, while the JSON column keeps both as escapes. Only values the columns give
 * back unchanged may stand in for the meta's, and only a timestamp already in the form the
 * column reads back.
 */
function columnsRoundTrip(columns: CoreColumns): boolean {
  const texts = [columns.trigger, columns.id, columns.correlation_id];
  const requestedAt = columns.requested_at;
  return (
    typeof requestedAt === 'string' &&
    DATABASE_ISO.test(requestedAt) &&
    isoFromDatabase(requestedAt) === requestedAt &&
    texts.every((text) => !text.includes('\u0000') && Buffer.from(text, 'utf8').toString('utf8') === text)
  );
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
