import { Cron } from 'croner';
import { z } from 'zod';

/**
 * When a schedule fires. A 5-field cron expression read in an IANA time zone (croner
 * handles daylight-saving changes: a time that does not exist that day fires at the
 * first existing minute after it, a time that occurs twice fires once), or a one-shot
 * instant.
 */
export const timeZoneSchema = z.string().min(1).max(64).refine(isTimeZone, 'must be an IANA time zone such as Europe/Berlin');

const cronExpression = z
  .string()
  .trim()
  .refine((value) => value.split(/\s+/).length === 5, 'must have exactly five fields: minute hour day-of-month month day-of-week')
  .refine(isValidCron, 'is not a valid cron expression');

export const scheduleTimingSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('cron'), cron: cronExpression, timezone: timeZoneSchema.default('UTC') }).strict(),
  z.object({ kind: z.literal('at'), at: z.iso.datetime({ offset: true }) }).strict(),
]);
export type ScheduleTiming = z.infer<typeof scheduleTimingSchema>;

/** The first fire strictly after `after`, or null when there is none (a past one-shot). */
export function nextFireAfter(timing: ScheduleTiming, after: Date): Date | null {
  if (timing.kind === 'at') {
    const at = new Date(timing.at);
    return at.getTime() > after.getTime() ? at : null;
  }
  return new Cron(timing.cron, { timezone: timing.timezone, paused: true }).nextRun(after);
}

/** The fires due in (from, to], oldest first, at most `limit` (a bound for long downtimes). */
export function firesBetween(timing: ScheduleTiming, from: Date, to: Date, limit: number): Date[] {
  const fires: Date[] = [];
  let cursor = from;
  while (fires.length < limit) {
    const next = nextFireAfter(timing, cursor);
    if (!next || next.getTime() > to.getTime()) break;
    fires.push(next);
    cursor = next;
  }
  return fires;
}

function isTimeZone(value: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: value });
    return true;
  } catch {
    return false;
  }
}

function isValidCron(value: string): boolean {
  try {
    new Cron(value, { paused: true });
    return true;
  } catch {
    return false;
  }
}
