/**
 * Wall-clock time in an IANA time zone, with nothing but Intl: the local date and minute
 * of an instant, the UTC bounds of a local day, and the instant a local time of day next
 * comes round. DST is handled by asking Intl for the offset at each candidate instant
 * rather than assuming a fixed one.
 */

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

/** True when Intl knows the zone (e.g. "Europe/Berlin", "UTC"). */
export function isValidTimeZone(timeZone: string): boolean {
  try {
    formatterFor(timeZone);
    return true;
  } catch {
    return false;
  }
}

export interface LocalParts {
  year: number;
  month: number; // 1-12
  day: number;
  hour: number;
  minute: number;
  second: number;
}

export function localParts(instant: Date, timeZone: string): LocalParts {
  const parts: Record<string, number> = {};
  for (const part of formatterFor(timeZone).formatToParts(instant)) {
    if (part.type !== 'literal') parts[part.type] = Number(part.value);
  }
  return { year: parts.year!, month: parts.month!, day: parts.day!, hour: parts.hour! % 24, minute: parts.minute!, second: parts.second! };
}

/** The zone's offset from UTC at an instant, in milliseconds (Berlin in summer: +7,200,000). */
export function offsetMs(instant: Date, timeZone: string): number {
  const local = localParts(instant, timeZone);
  const asUtc = Date.UTC(local.year, local.month - 1, local.day, local.hour, local.minute, local.second);
  return asUtc - Math.floor(instant.getTime() / 1000) * 1000;
}

/**
 * The instant a local wall time happens: vigil's one daylight-saving policy, used by
 * quiet hours, follow-up timing and cron schedules alike (schedule-timing.ts resolves
 * every cron match through here), documented in the README:
 * - a wall time that does not exist (inside a spring-forward gap) is the first instant
 *   after the gap — 02:30 on a 02:00→03:00 day is 03:00, as croner and cron do;
 * - a wall time that occurs twice (fall back) is its first occurrence, and only that one.
 */
export function instantOfLocal(local: Omit<LocalParts, 'second'> & { second?: number }, timeZone: string): Date {
  const wall = Date.UTC(local.year, local.month - 1, local.day, local.hour, local.minute, local.second ?? 0);
  // Offsets a day either side bracket any transition near this wall time.
  const offsetBefore = offsetMs(new Date(wall - 86_400_000), timeZone);
  const offsetAfter = offsetMs(new Date(wall + 86_400_000), timeZone);
  const valid = [wall - offsetBefore, wall - offsetAfter].filter((candidate) => wallOf(candidate, timeZone) === wall);
  if (valid.length > 0) return new Date(Math.min(...valid));
  return gapEnd(wall - offsetAfter, wall - offsetBefore, offsetAfter, timeZone);
}

// The first instant in (low, high] with the offset after a spring-forward gap: where the
// gap ends. Binary search to the millisecond (about 22 offset lookups; gaps are rare).
function gapEnd(low: number, high: number, offsetAfterGap: number, timeZone: string): Date {
  while (high - low > 1) {
    const middle = Math.floor((low + high) / 2);
    if (offsetMs(new Date(middle), timeZone) === offsetAfterGap) high = middle;
    else low = middle;
  }
  return new Date(high);
}

function wallOf(instant: number, timeZone: string): number {
  const local = localParts(new Date(instant), timeZone);
  return Date.UTC(local.year, local.month - 1, local.day, local.hour, local.minute, local.second) + (instant % 1000);
}

/** The local calendar day of an instant, as YYYY-MM-DD: the key of per-day caps. */
export function localDay(instant: Date, timeZone: string): string {
  const local = localParts(instant, timeZone);
  return `${local.year}-${pad(local.month)}-${pad(local.day)}`;
}

/** [start, end) of the local day containing an instant, as UTC instants (23 or 25 hours on DST days). */
export function localDayBounds(instant: Date, timeZone: string): { start: Date; end: Date } {
  const local = localParts(instant, timeZone);
  const start = instantOfLocal({ year: local.year, month: local.month, day: local.day, hour: 0, minute: 0 }, timeZone);
  const next = new Date(Date.UTC(local.year, local.month - 1, local.day + 1));
  const end = instantOfLocal({ year: next.getUTCFullYear(), month: next.getUTCMonth() + 1, day: next.getUTCDate(), hour: 0, minute: 0 }, timeZone);
  return { start, end };
}

/** Minutes since local midnight, the unit quiet hours are written in. */
export function localMinuteOfDay(instant: Date, timeZone: string): number {
  const local = localParts(instant, timeZone);
  return local.hour * 60 + local.minute;
}

/** The first instant at or after `from` whose local time of day is `minuteOfDay`. */
export function nextLocalTime(from: Date, minuteOfDay: number, timeZone: string): Date {
  const local = localParts(from, timeZone);
  for (let dayOffset = 0; dayOffset <= 2; dayOffset++) {
    const date = new Date(Date.UTC(local.year, local.month - 1, local.day + dayOffset));
    const candidate = instantOfLocal(
      { year: date.getUTCFullYear(), month: date.getUTCMonth() + 1, day: date.getUTCDate(), hour: Math.floor(minuteOfDay / 60), minute: minuteOfDay % 60 },
      timeZone,
    );
    if (candidate.getTime() >= from.getTime()) return candidate;
  }
  throw new Error(`no local time ${minuteOfDay} after ${from.toISOString()} in ${timeZone}`); // unreachable: every day has every minute or a later one
}

function pad(value: number): string {
  return String(value).padStart(2, '0');
}
