import { describe, expect, it } from 'vitest';
import { autonomyPolicySchema, quietHoursSchema } from '../../src/domain/autonomy/autonomy-policy.js';
import { endOfQuietHours, inQuietHours, planDueTime } from '../../src/domain/autonomy/follow-up-timing.js';
import { instantOfLocal, localParts, nextLocalTime } from '../../src/domain/autonomy/zoned-time.js';
import { firesBetween, nextFireAfter, scheduleTimingSchema } from '../../src/domain/schedules/schedule-timing.js';

/**
 * One daylight-saving policy for cron schedules and for quiet hours / follow-up timing
 * (README, "Local times and daylight saving"): a local time that does not exist (spring
 * forward) is the first instant after the gap; a local time that occurs twice (fall back)
 * is its first occurrence, once.
 */
const zones = [
  // zone, spring-forward day, fall-back day (2026), the local hours the change touches
  { zone: 'Europe/Berlin', spring: '2026-03-29', autumn: '2026-10-25' },
  { zone: 'America/New_York', spring: '2026-03-08', autumn: '2026-11-01' },
  { zone: 'Australia/Sydney', spring: '2026-10-04', autumn: '2026-04-05' },
];

const cron = (expression: string, timezone: string) => scheduleTimingSchema.parse({ kind: 'cron', cron: expression, timezone });
const wall = (instant: Date, zone: string) => {
  const local = localParts(instant, zone);
  return `${local.year}-${String(local.month).padStart(2, '0')}-${String(local.day).padStart(2, '0')} ${String(local.hour).padStart(2, '0')}:${String(local.minute).padStart(2, '0')}`;
};

describe('one daylight-saving policy for schedules and follow-up timing', () => {
  it('cron (croner) and zoned time agree on every local time across DST changes in 3 zones', () => {
    let cases = 0;
    const disagreements: string[] = [];
    for (const { zone, spring, autumn } of zones) {
      for (const day of [spring, autumn]) {
        const [year, month, date] = day.split('-').map(Number) as [number, number, number];
        // Every 10 minutes of local 00:00–04:50 on the change day, asked from several points in time around it.
        for (let minuteOfDay = 0; minuteOfDay < 5 * 60; minuteOfDay += 10) {
          const midnight = instantOfLocal({ year, month, day: date, hour: 0, minute: 0 }, zone).getTime();
          for (const fromOffsetHours of [-6, 0.5, 1.5, 2.25, 2.75, 3.5]) {
            const from = new Date(midnight + fromOffsetHours * 3_600_000);
            const byCron = nextFireAfter(cron(`${minuteOfDay % 60} ${Math.floor(minuteOfDay / 60)} * * *`, zone), from);
            // nextLocalTime is "at or after"; a fire is "strictly after".
            const byZonedTime = nextLocalTime(new Date(from.getTime() + 1), minuteOfDay, zone);
            cases++;
            if (byCron?.getTime() !== byZonedTime.getTime()) {
              disagreements.push(`${zone} ${minuteOfDay} from ${from.toISOString()}: cron ${byCron?.toISOString()} vs zoned ${byZonedTime.toISOString()}`);
            }
          }
        }
      }
    }
    expect(cases).toBe(3 * 2 * 30 * 6);
    expect(disagreements).toEqual([]);
  });

  it('a local time in the spring-forward gap is the first instant after the gap, in both paths', () => {
    for (const { zone, spring } of zones) {
      const [year, month, day] = spring.split('-').map(Number) as [number, number, number];
      // 02:30 does not exist on the spring day in all three zones (02:00 → 03:00).
      const resolved = instantOfLocal({ year, month, day, hour: 2, minute: 30 }, zone);
      expect(wall(resolved, zone), zone).toBe(`${spring} 03:00`);
      expect(wall(new Date(resolved.getTime() - 1), zone), zone).toBe(`${spring} 01:59`); // right after the gap
      const fires = firesBetween(cron('30 2 * * *', zone), new Date(resolved.getTime() - 12 * 3_600_000), new Date(resolved.getTime() + 12 * 3_600_000), 5);
      expect(fires, zone).toEqual([resolved]);
      // Several times inside the gap fire once, not once each.
      const quarterly = firesBetween(cron('*/15 2 * * *', zone), new Date(resolved.getTime() - 12 * 3_600_000), new Date(resolved.getTime() + 12 * 3_600_000), 10);
      expect(quarterly, zone).toEqual([resolved]);
    }
  });

  it('a local time that occurs twice (fall back) is its first occurrence, once, in both paths', () => {
    for (const { zone, autumn } of zones) {
      const [year, month, day] = autumn.split('-').map(Number) as [number, number, number];
      // 01:30 in New York, 02:30 in Berlin and Sydney occur twice; the first has the larger offset.
      const hour = zone === 'America/New_York' ? 1 : 2;
      const first = instantOfLocal({ year, month, day, hour, minute: 30 }, zone);
      expect(wall(first, zone)).toBe(`${autumn} 0${hour}:30`);
      expect(wall(new Date(first.getTime() + 3_600_000), zone), `${zone}: the second occurrence is an hour later`).toBe(`${autumn} 0${hour}:30`);
      const fires = firesBetween(cron(`30 ${hour} * * *`, zone), new Date(first.getTime() - 12 * 3_600_000), new Date(first.getTime() + 12 * 3_600_000), 5);
      expect(fires, zone).toEqual([first]);
      expect(nextLocalTime(new Date(first.getTime() - 12 * 3_600_000), hour * 60 + 30, zone)).toEqual(first);
      // Asked between the two occurrences: the next one is tomorrow's, in both paths.
      const between = new Date(first.getTime() + 30 * 60_000);
      const tomorrow = nextLocalTime(between, hour * 60 + 30, zone);
      expect(wall(tomorrow, zone).slice(11)).toBe(`0${hour}:30`);
      expect(tomorrow.getTime() - first.getTime()).toBeGreaterThan(23 * 3_600_000);
      expect(nextFireAfter(cron(`30 ${hour} * * *`, zone), between)).toEqual(tomorrow);
    }
  });

  it('I5: quiet hours that end at a nonexistent or repeated local time end when a cron schedule at that time fires', () => {
    for (const { zone, spring, autumn } of zones) {
      for (const day of [spring, autumn]) {
        const [year, month, date] = day.split('-').map(Number) as [number, number, number];
        const end = zone === 'America/New_York' && day === autumn ? '01:30' : '02:30';
        const [hour, minute] = end.split(':').map(Number) as [number, number];
        const inside = instantOfLocal({ year, month, day: date, hour: 0, minute: 30 }, zone);
        const quietEnd = endOfQuietHours(inside, quietHoursSchema.parse({ start: '00:00', end }), zone);
        expect(quietEnd, `${zone} ${day}`).toEqual(nextFireAfter(cron(`${minute} ${hour} * * *`, zone), inside));
        expect(quietEnd).toEqual(instantOfLocal({ year, month, day: date, hour, minute }, zone));
      }
    }
  });

  it('I5: a follow-up due in the repeated hour of a fall-back day, inside quiet hours by the wall clock, waits until the clock next shows their end, not a day more', () => {
    for (const { zone, autumn } of zones) {
      const [year, month, day] = autumn.split('-').map(Number) as [number, number, number];
      const hour = zone === 'America/New_York' ? 1 : 2;
      const end = `0${hour}:30`;
      const quiet = quietHoursSchema.parse({ start: '00:00', end });
      const firstEnd = instantOfLocal({ year, month, day, hour, minute: 30 }, zone);
      // 40 minutes after the first end, the clock shows hour:10 again (the repeated hour): quiet by the wall clock.
      const due = new Date(firstEnd.getTime() + 40 * 60_000);
      expect(wall(due, zone)).toBe(`${autumn} 0${hour}:10`);
      expect(inQuietHours(due, quiet, zone), zone).toBe(true);
      // They end when the clock shows the end again, 20 minutes on (the second occurrence).
      const quietEnd = endOfQuietHours(due, quiet, zone);
      expect(quietEnd.getTime() - due.getTime(), `${zone}: ends at ${quietEnd.toISOString()}`).toBe(20 * 60_000);
      expect(inQuietHours(quietEnd, quiet, zone)).toBe(false);
      const policy = autonomyPolicySchema.parse({ enabled: true, timeZone: zone, quietHours: { start: '00:00', end } });
      const plan = planDueTime(policy, new Date(due.getTime() - 60_000), 60_000);
      expect(plan, zone).toMatchObject({ kind: 'due', dueAt: quietEnd, deferredByQuietHours: true });
    }
  });

  it('an hourly schedule on a fall-back day fires once per wall-clock hour (the repeated hour once)', () => {
    const { zone, autumn } = zones[0]!;
    const [year, month, day] = autumn.split('-').map(Number) as [number, number, number];
    const start = instantOfLocal({ year, month, day, hour: 0, minute: 0 }, zone);
    const end = instantOfLocal({ year, month, day: day + 1, hour: 0, minute: 0 }, zone);
    const fires = firesBetween(cron('0 * * * *', zone), new Date(start.getTime() - 1), new Date(end.getTime() - 1), 50);
    expect(fires.map((fire) => wall(fire, zone).slice(11))).toEqual(Array.from({ length: 24 }, (_, hour) => `${String(hour).padStart(2, '0')}:00`));
  });
});
