import { coreRunMeta, parseRunMeta } from '../domain/envelope/run-meta.js';
import { isVigilError } from '../domain/errors.js';
import { redact } from '../domain/redaction.js';
import type { RunContext } from '../domain/run-context.js';

/**
 * A run's meta as it is stored, logged and shown to the model: the entry point's
 * trigger-specific keys plus the core keys taken from the run context (the single
 * carrier, seed 004), validated by the trigger's strict schema, then redacted.
 *
 * The core keys (`trigger`, `run_id`, `requested_at_utc`, `correlation_id`) always come
 * from the context: an entry point cannot claim another trigger or run through its meta.
 * Validation runs before redaction (the schema bounds what the entry point gave);
 * redaction runs on the result, so the run record, the logs and the envelope all get the
 * same secret-free copy.
 */

export interface ResolvedRunMeta {
  meta: Record<string, unknown>;
  /** False when the entry point's meta failed its schema and only the core keys were kept. */
  valid: boolean;
  /** What failed, as paths and messages (never the values). */
  issues: Array<{ path: string; message: string }>;
}

const CORE_KEYS = new Set(['trigger', 'run_id', 'requested_at_utc', 'correlation_id']);

function candidateOf(context: Pick<RunContext, 'trigger' | 'runId' | 'requestedAt' | 'correlationId' | 'meta'>): Record<string, unknown> {
  const candidate: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(context.meta)) if (!CORE_KEYS.has(key)) candidate[key] = value;
  return { ...candidate, ...coreRunMeta(context) };
}

/**
 * Strict: the validated, redacted meta, or VALIDATION_FAILED. For entry points that take
 * outside input (a webhook, a chat channel) and must refuse it before anything starts (I11).
 */
export function runMetaOf(context: Pick<RunContext, 'trigger' | 'runId' | 'requestedAt' | 'correlationId' | 'meta'>): Record<string, unknown> {
  const parsed = parseRunMeta(context.trigger, candidateOf(context));
  return asRecord(redact(parsed));
}

/**
 * Lenient, for the run coordinator: a run the system already decided to start (a timer,
 * a schedule) is not lost because its meta is malformed. Its meta falls back to the core
 * keys and the caller logs the issues: a bug in the entry point, not in the input.
 */
export function resolveRunMeta(context: Pick<RunContext, 'trigger' | 'runId' | 'requestedAt' | 'correlationId' | 'meta'>): ResolvedRunMeta {
  try {
    return { meta: runMetaOf(context), valid: true, issues: [] };
  } catch (error) {
    if (!isVigilError(error) || error.code !== 'VALIDATION_FAILED') throw error;
    const issues = Array.isArray(error.details) ? (error.details as ResolvedRunMeta['issues']) : [{ path: '', message: error.message }];
    return { meta: asRecord(redact(coreRunMeta(context))), valid: false, issues };
  }
}

function asRecord(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}
