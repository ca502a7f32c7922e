import { z } from 'zod';
import { VigilError } from '../errors.js';
import { autonomousTriggerTypeSchema } from '../message-metadata.js';
import type { RunContext, RunTrigger } from '../run-context.js';

/**
 * The typed `meta` of a run, one schema per trigger (seed 004, "Suggested Core Keys").
 * Schemas are strict: an unknown key is a validation error, so an entry point cannot
 * smuggle arbitrary data into the model-visible envelope; webhook extras go in the
 * bounded `payload`. Every string is bounded so that a valid meta almost always fits the
 * envelope without truncation.
 */

const identifier = z.string().min(1).max(128);
const utcTimestamp = z.iso.datetime(); // RFC 3339 with "Z" only: the keys say _utc

const core = {
  run_id: identifier,
  requested_at_utc: utcTimestamp,
  correlation_id: identifier,
};

export const WEBHOOK_PAYLOAD_MAX_KEYS = 32;
const payloadValue = z.union([z.string().max(1024), z.number(), z.boolean(), z.null()]);

/** Fields a webhook mapping chose to expose: flat scalars, few keys, short strings. */
export const webhookPayloadSchema = z
  .record(z.string().min(1).max(64), payloadValue)
  .refine((payload) => Object.keys(payload).length <= WEBHOOK_PAYLOAD_MAX_KEYS, {
    message: `at most ${WEBHOOK_PAYLOAD_MAX_KEYS} payload fields`,
  });

export const userMetaSchema = z.strictObject({ trigger: z.literal('user'), ...core });

export const autonomyMetaSchema = z.strictObject({
  trigger: z.literal('autonomy'),
  ...core,
  trigger_type: autonomousTriggerTypeSchema,
  trigger_reason: z.string().max(500).optional(),
  timer_id: identifier,
});

export const cronMetaSchema = z.strictObject({
  trigger: z.literal('cron'),
  ...core,
  schedule_id: identifier,
  fire_id: identifier,
  scheduled_for_utc: utcTimestamp,
});

export const webhookMetaSchema = z.strictObject({
  trigger: z.literal('webhook'),
  ...core,
  hook_id: identifier,
  delivery_id: identifier,
  payload: webhookPayloadSchema.optional(),
});

export const TELEGRAM_CHAT_TYPES = ['private', 'group', 'supergroup', 'channel'] as const;

export const channelMetaSchema = z.strictObject({
  trigger: z.literal('channel'),
  ...core,
  channel: z.literal('telegram'),
  chat_id: z.number().int(), // negative for groups; Telegram ids fit in 52 bits
  message_id: z.number().int().positive(),
  chat_type: z.enum(TELEGRAM_CHAT_TYPES),
  from_user_id: z.number().int().positive().optional(), // channel posts have no sender
});

export const HEARTBEAT_PRIORITIES = ['low', 'medium', 'high'] as const;

export const heartbeatMetaSchema = z.strictObject({
  trigger: z.literal('heartbeat'),
  ...core,
  plan_id: identifier,
  idle_ms: z.number().int().nonnegative(),
  priority: z.enum(HEARTBEAT_PRIORITIES),
});

export const checkInMetaSchema = z.strictObject({
  trigger: z.literal('check_in'),
  ...core,
  check_in_id: identifier,
  /** The agent's own reason, given when it set the check-in. */
  reason: z.string().max(500),
  set_at_utc: utcTimestamp,
});

export const runMetaSchemas = {
  user: userMetaSchema,
  autonomy: autonomyMetaSchema,
  cron: cronMetaSchema,
  webhook: webhookMetaSchema,
  channel: channelMetaSchema,
  heartbeat: heartbeatMetaSchema,
  check_in: checkInMetaSchema,
} as const satisfies Record<RunTrigger, z.ZodType>;

export const runMetaSchema = z.discriminatedUnion('trigger', [
  userMetaSchema,
  autonomyMetaSchema,
  cronMetaSchema,
  webhookMetaSchema,
  channelMetaSchema,
  heartbeatMetaSchema,
  checkInMetaSchema,
]);

export type RunMeta = z.infer<typeof runMetaSchema>;
export type RunMetaOf<T extends RunTrigger> = z.infer<(typeof runMetaSchemas)[T]>;

/**
 * Validate `value` as the meta of a `trigger` run. A missing `trigger` key is filled in;
 * a different one is an error (the caller and the data disagree about why the run happens).
 */
export function parseRunMeta<T extends RunTrigger>(trigger: T, value: unknown): RunMetaOf<T> {
  // Own keys only: a trigger such as "toString" must not reach Object.prototype.
  if (!Object.hasOwn(runMetaSchemas, trigger)) throw new VigilError('VALIDATION_FAILED', `unknown run trigger: ${String(trigger)}`);
  const schema: z.ZodType = runMetaSchemas[trigger];
  const input = isRecord(value) && !Object.hasOwn(value, 'trigger') ? { trigger, ...value } : value;
  const result = schema.safeParse(input);
  if (!result.success) {
    const issues = result.error.issues.map((issue) => ({ path: issue.path.map(String).join('.'), message: issue.message }));
    const summary = issues.map((issue) => (issue.path === '' ? issue.message : `${issue.path}: ${issue.message}`)).join('; ');
    throw new VigilError('VALIDATION_FAILED', `invalid ${trigger} run meta: ${summary}`, { cause: result.error, details: issues });
  }
  return result.data as RunMetaOf<T>;
}

/** The core keys every meta carries, taken from the run context (the single carrier). */
export function coreRunMeta(context: Pick<RunContext, 'trigger' | 'runId' | 'requestedAt' | 'correlationId'>) {
  return {
    trigger: context.trigger,
    run_id: context.runId,
    requested_at_utc: context.requestedAt,
    correlation_id: context.correlationId,
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
