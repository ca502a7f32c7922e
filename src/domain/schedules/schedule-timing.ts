import { Cron } from 'croner';
import { z } from 'zod';
import { instantOfLocal, localParts } from '../autonomy/zoned-time.js';

/**
 * When a schedule fires. A 5-field cron expression read in an IANA time zone, or a
 * one-shot instant.
 *
 * Daylight saving: croner only matches the expression against wall-clock times (it runs
 * in UTC over "naive" local times, where no day has a gap or a repeat); each match is
 * turned into an instant by zoned-time's instantOfLocal, the one policy quiet hours and
 * follow-ups use too. So a time that does not exist that day fires at the first instant
 * after the gap (several such times fire once), and a time that occurs twice fires once,
 * at its first occurrence.
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
  return nextCronFire(timing.cron, timing.timezone, after);
}

/** More matches than any expression has in the wall-clock hours a DST change repeats. */
const MAX_MATCHES_PER_FIRE = 10_000;

function nextCronFire(expression: string, timeZone: string, after: Date): Date | null {
  const matcher = new Cron(expression, { timezone: 'UTC', paused: true });
  // Wall-clock time as a UTC date: its UTC fields are the local fields in the zone.
  const local = localParts(after, timeZone);
  let wall: Date | null = new Date(Date.UTC(local.year, local.month - 1, local.day, local.hour, local.minute, local.second, after.getUTCMilliseconds()));
  for (let match = 0; match < MAX_MATCHES_PER_FIRE; match++) {
    wall = matcher.nextRun(wall);
    if (wall === null) return null;
    const instant = instantOfLocal(
      { year: wall.getUTCFullYear(), month: wall.getUTCMonth() + 1, day: wall.getUTCDate(), hour: wall.getUTCHours(), minute: wall.getUTCMinutes() },
      timeZone,
    );
    // A match can resolve to an instant not after `after`: a repeated hour's second pass,
    // or a gap time that already fired at the gap's end. The next match is tried then.
    if (instant.getTime() > after.getTime()) return instant;
  }
  return null;
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
