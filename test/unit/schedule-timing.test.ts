import { describe, expect, it } from 'vitest';
import { firesBetween, nextFireAfter, scheduleTimingSchema } from '../../src/domain/schedules/schedule-timing.js';
import { isMissed } from '../../src/domain/schedules/missed-policy.js';

const cron = (expression: string, timezone: string) => scheduleTimingSchema.parse({ kind: 'cron', cron: expression, timezone });

describe('schedule timing', () => {
  it('fires on local time in a non-UTC zone across the spring daylight-saving change', () => {
    const daily = cron('30 9 * * *', 'Europe/Berlin');
    const fires = firesBetween(daily, new Date('2026-03-27T00:00:00Z'), new Date('2026-03-31T00:00:00Z'), 10);
    // 09:30 in Berlin is 08:30Z in winter (CET) and 07:30Z in summer (CEST, from 29 March).
    expect(fires.map((fire) => fire.toISOString())).toEqual(['2026-03-27T08:30:00.000Z', '2026-03-28T08:30:00.000Z', '2026-03-29T07:30:00.000Z', '2026-03-30T07:30:00.000Z']);
  });

  it('a time skipped by the spring change fires once, at the next existing minute; a repeated autumn time fires once', () => {
    const early = cron('30 2 * * *', 'Europe/Berlin');
    const spring = firesBetween(early, new Date('2026-03-28T12:00:00Z'), new Date('2026-03-29T23:00:00Z'), 10);
    expect(spring.map((fire) => fire.toISOString())).toEqual(['2026-03-29T01:00:00.000Z']);
    const autumn = firesBetween(early, new Date('2026-10-24T12:00:00Z'), new Date('2026-10-25T23:00:00Z'), 10);
    expect(autumn).toHaveLength(1);
  });

  it('across the US autumn change, in New York', () => {
    const morning = cron('0 9 * * 1-5', 'America/New_York');
    const fires = firesBetween(morning, new Date('2026-10-30T00:00:00Z'), new Date('2026-11-04T00:00:00Z'), 10);
    expect(fires.map((fire) => fire.toISOString())).toEqual(['2026-10-30T13:00:00.000Z', '2026-11-02T14:00:00.000Z', '2026-11-03T14:00:00.000Z']);
  });

  it('one-shot "at" fires once, and never when past', () => {
    const once = scheduleTimingSchema.parse({ kind: 'at', at: '2026-12-01T10:00:00+01:00' });
    expect(nextFireAfter(once, new Date('2026-11-30T00:00:00Z'))?.toISOString()).toBe('2026-12-01T09:00:00.000Z');
    expect(nextFireAfter(once, new Date('2026-12-01T09:00:00Z'))).toBeNull();
  });

  it('refuses six-field cron, bad expressions and unknown zones', () => {
    expect(scheduleTimingSchema.safeParse({ kind: 'cron', cron: '* * * * * *' }).success).toBe(false);
    expect(scheduleTimingSchema.safeParse({ kind: 'cron', cron: '61 * * * *' }).success).toBe(false);
    expect(scheduleTimingSchema.safeParse({ kind: 'cron', cron: '0 9 * * *', timezone: 'Mars/Olympus' }).success).toBe(false);
    expect(scheduleTimingSchema.safeParse({ kind: 'cron', cron: '0 9 * * *', extra: 1 }).success).toBe(false);
  });

  it('bounds the fires of a long downtime', () => {
    expect(firesBetween(cron('* * * * *', 'UTC'), new Date('2026-01-01T00:00:00Z'), new Date('2026-01-02T00:00:00Z'), 5)).toHaveLength(5);
  });

  it('a fire delivered more than the grace after its time is missed', () => {
    expect(isMissed(new Date('2026-01-01T00:00:00Z'), new Date('2026-01-01T00:00:30Z'))).toBe(false);
    expect(isMissed(new Date('2026-01-01T00:00:00Z'), new Date('2026-01-01T00:05:00Z'))).toBe(true);
  });
});
