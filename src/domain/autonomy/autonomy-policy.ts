import { z } from 'zod';
import { AUTONOMOUS_TRIGGER_TYPES, type AutonomousTriggerType } from '../message-metadata.js';
import { isValidTimeZone } from './zoned-time.js';

/**
 * An agent's autonomy policy: whether and when it follows up after a person goes quiet.
 * Stored in `agents.settings.autonomy`, validated by this schema on the way in and on
 * the way out (a stored policy that no longer parses counts as "off").
 *
 * Every bound here is enforced before any model call (I5): caps per silence and per
 * day, quiet hours and the daily model-call budget are checked when a follow-up fires,
 * whether or not anyone is connected.
 */

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Delays are bounded above so a job queue's retention never outlives a timer. */
export const MAX_DELAY_MS = 30 * DAY;
/** Below this a "follow-up" is a loop; tests use 10–300 ms delays, people use minutes. */
export const MIN_DELAY_MS = 10;

const delay = z.number().int().min(MIN_DELAY_MS).max(MAX_DELAY_MS);
const clock = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be HH:MM (24-hour)');

export const DEFAULT_DELAYS_MS: Readonly<Record<AutonomousTriggerType, number>> = Object.freeze({
  question_unanswered: 2 * HOUR,
  waiting_for_decision: 4 * HOUR,
  task_incomplete: 6 * HOUR,
  check_in: DAY,
});

const delaysSchema = z
  .object(Object.fromEntries(AUTONOMOUS_TRIGGER_TYPES.map((type) => [type, delay.default(DEFAULT_DELAYS_MS[type])])) as Record<AutonomousTriggerType, z.ZodDefault<typeof delay>>)
  .strict();

export const quietHoursSchema = z
  .object({
    /** Local time quiet hours begin, in the policy's time zone. */
    start: clock,
    /** Local time they end; earlier than start means they span midnight (22:00–07:00). */
    end: clock,
    /**
     * What happens to a follow-up due inside quiet hours: `defer` moves it to the end of
     * quiet hours, `drop` drops it (recorded as a dropped timer with reason quiet_hours).
     */
    mode: z.enum(['defer', 'drop']).default('defer'),
  })
  .strict()
  .refine((value) => value.start !== value.end, { message: 'start and end must differ', path: ['end'] });

export const autonomyPolicySchema = z
  .object({
    enabled: z.boolean().default(false),
    /** Delay after the agent's reply, by the trigger chosen for it. */
    delaysMs: delaysSchema.default(() => delaysSchema.parse({})),
    minDelayMs: delay.default(MINUTE),
    maxDelayMs: delay.default(7 * DAY),
    /** Each further follow-up in one silence waits this many times longer than the one before. */
    backoffMultiplier: z.number().min(1).max(100).default(2),
    /** Follow-ups between two real user messages. */
    maxPerSilence: z.number().int().min(0).max(100).default(3),
    /** Follow-ups per thread per local day (in timeZone). */
    maxPerDay: z.number().int().min(0).max(1000).default(5),
    /** Model calls autonomy may make per agent per local day (follow-ups, retries, the evaluator). */
    modelCallsPerDay: z.number().int().min(0).max(100_000).default(50),
    /** IANA zone of quiet hours and of "per day". */
    timeZone: z.string().refine(isValidTimeZone, 'must be an IANA time zone such as Europe/Berlin').default('UTC'),
    quietHours: quietHoursSchema.nullable().default(null),
    /** `rules`: deterministic rules pick the trigger; `rules+model`: a model evaluator may refine or veto it. */
    triggerChooser: z.enum(['rules', 'rules+model']).default('rules'),
    /** A follow-up that comes due while its thread is busy waits this long and tries again. */
    busyRetryMs: delay.default(5 * SECOND),
  })
  .strict()
  .refine((value) => value.minDelayMs <= value.maxDelayMs, { message: 'minDelayMs must not exceed maxDelayMs', path: ['minDelayMs'] });

export type AutonomyPolicy = z.infer<typeof autonomyPolicySchema>;
export type AutonomyPolicyInput = z.input<typeof autonomyPolicySchema>;
export type QuietHours = z.infer<typeof quietHoursSchema>;

/** The settings key an agent's policy lives under. */
export const AUTONOMY_SETTINGS_KEY = 'autonomy';

/** Off, with every default: what an agent without a policy gets. */
export const DISABLED_POLICY: AutonomyPolicy = Object.freeze(autonomyPolicySchema.parse({})) as AutonomyPolicy;

/**
 * The policy in an agent's settings. Missing means off; a stored value that no longer
 * parses (say, written by a newer version) also means off, and `problem` says why so
 * the caller can log it.
 */
export function policyFromSettings(settings: Record<string, unknown>): { policy: AutonomyPolicy; problem?: string } {
  const stored = settings[AUTONOMY_SETTINGS_KEY];
  if (stored === undefined || stored === null) return { policy: DISABLED_POLICY };
  const parsed = autonomyPolicySchema.safeParse(stored);
  if (parsed.success) return { policy: parsed.data };
  return { policy: DISABLED_POLICY, problem: parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ') };
}

export function minutesOfClock(value: string): number {
  const [hours, minutes] = value.split(':').map(Number);
  return hours! * 60 + minutes!;
}
