import { describe, expect, it } from 'vitest';
import { autonomyPolicySchema, DISABLED_POLICY, policyFromSettings, type AutonomyPolicy } from '../../src/domain/autonomy/autonomy-policy.js';
import { checkCaps } from '../../src/domain/autonomy/follow-up-caps.js';
import { endOfQuietHours, followUpDelayMs, inQuietHours, planDueTime } from '../../src/domain/autonomy/follow-up-timing.js';
import { chooseTriggerByRules } from '../../src/domain/autonomy/trigger-rules.js';
import { instantOfLocal, localDay, localDayBounds, localParts, nextLocalTime } from '../../src/domain/autonomy/zoned-time.js';

const policy = (input: Record<string, unknown> = {}): AutonomyPolicy => autonomyPolicySchema.parse({ enabled: true, ...input });
const berlin = 'Europe/Berlin';

describe('autonomy policy', () => {
  it('is off by default, with every default filled in; an agent without one has autonomy off', () => {
    expect(DISABLED_POLICY.enabled).toBe(false);
    expect(policyFromSettings({}).policy.enabled).toBe(false);
    expect(policyFromSettings({ autonomy: { enabled: true } }).policy).toMatchObject({ enabled: true, maxPerSilence: 3, maxPerDay: 5, timeZone: 'UTC', triggerChooser: 'rules', quietHours: null });
  });

  it('refuses unknown fields, bad zones, clocks and bounds; a stored policy that no longer parses is off, with the reason', () => {
    for (const bad of [{ surprise: true }, { timeZone: 'Nowhere/City' }, { quietHours: { start: '22:00', end: '22:00' } }, { quietHours: { start: '7', end: '8' } }, { minDelayMs: 10_000, maxDelayMs: 1_000 }, { delaysMs: { check_in: 5 } }, { maxPerSilence: -1 }]) {
      expect(autonomyPolicySchema.safeParse({ enabled: true, ...bad }).success, JSON.stringify(bad)).toBe(false);
    }
    const stale = policyFromSettings({ autonomy: { enabled: true, maxFollowUps: 2 } });
    expect(stale.policy.enabled).toBe(false);
    expect(stale.problem).toContain('maxFollowUps');
  });
});

describe('follow-up timing', () => {
  it('stretches each further follow-up of a silence by the backoff, within [minDelayMs, maxDelayMs]', () => {
    const p = policy({ delaysMs: { question_unanswered: 60_000 }, backoffMultiplier: 2, minDelayMs: 120_000, maxDelayMs: 300_000 });
    expect([1, 2, 3, 4].map((ordinal) => followUpDelayMs(p, 'question_unanswered', ordinal))).toEqual([120_000, 120_000, 240_000, 300_000]);
  });

  it('knows quiet hours across midnight in the policy time zone', () => {
    const quiet = { start: '22:00', end: '07:00', mode: 'defer' as const };
    expect(inQuietHours(new Date('2025-06-01T20:30:00Z'), quiet, berlin)).toBe(true); // 22:30 CEST
    expect(inQuietHours(new Date('2025-06-01T04:59:00Z'), quiet, berlin)).toBe(true); // 06:59
    expect(inQuietHours(new Date('2025-06-01T05:00:00Z'), quiet, berlin)).toBe(false); // 07:00
    expect(inQuietHours(new Date('2025-06-01T19:59:00Z'), quiet, berlin)).toBe(false); // 21:59
    expect(endOfQuietHours(new Date('2025-06-01T20:30:00Z'), quiet, berlin).toISOString()).toBe('2025-06-02T05:00:00.000Z');
    expect(endOfQuietHours(new Date('2025-01-15T03:00:00Z'), quiet, berlin).toISOString()).toBe('2025-01-15T06:00:00.000Z'); // winter: CET
  });

  it('I5: defers a due time inside quiet hours to their end, or drops it, per the policy', () => {
    const now = new Date('2025-06-01T19:50:00Z'); // 21:50 in Berlin
    const defer = policy({ timeZone: berlin, quietHours: { start: '22:00', end: '07:00' }, minDelayMs: 10 });
    expect(planDueTime(defer, now, 5 * 60_000)).toMatchObject({ kind: 'due', deferredByQuietHours: false }); // 21:55: before them
    const deferred = planDueTime(defer, now, 30 * 60_000); // 22:20: inside
    expect(deferred).toMatchObject({ kind: 'due', deferredByQuietHours: true });
    expect(deferred.dueAt.toISOString()).toBe('2025-06-02T05:00:00.000Z');
    const drop = policy({ timeZone: berlin, quietHours: { start: '22:00', end: '07:00', mode: 'drop' } });
    expect(planDueTime(drop, now, 30 * 60_000)).toMatchObject({ kind: 'dropped', reason: 'quiet_hours' });
  });
});

describe('caps (I5)', () => {
  it('I5: says no at quiet hours, the per-silence cap and the per-day cap, in that order', () => {
    const p = policy({ maxPerSilence: 2, maxPerDay: 3, timeZone: berlin, quietHours: { start: '22:00', end: '07:00' } });
    const day = new Date('2025-06-01T10:00:00Z');
    const night = new Date('2025-06-01T21:00:00Z');
    expect(checkCaps(p, day, { firedThisSilence: 1, firedToday: 2 })).toEqual({ allowed: true });
    expect(checkCaps(p, night, { firedThisSilence: 0, firedToday: 0 })).toEqual({ allowed: false, reason: 'quiet_hours' });
    expect(checkCaps(p, day, { firedThisSilence: 2, firedToday: 0 })).toEqual({ allowed: false, reason: 'cap_per_silence' });
    expect(checkCaps(p, day, { firedThisSilence: 0, firedToday: 3 })).toEqual({ allowed: false, reason: 'cap_per_day' });
  });
});

describe('zoned time', () => {
  it('finds local days (with their 23- and 25-hour DST days) and local times', () => {
    expect(localDay(new Date('2025-06-01T22:30:00Z'), berlin)).toBe('2025-06-02');
    expect(localDay(new Date('2025-06-01T22:30:00Z'), 'UTC')).toBe('2025-06-01');
    const spring = localDayBounds(new Date('2025-03-30T12:00:00Z'), berlin);
    expect((spring.end.getTime() - spring.start.getTime()) / 3_600_000).toBe(23);
    const autumn = localDayBounds(new Date('2025-10-26T12:00:00Z'), berlin);
    expect((autumn.end.getTime() - autumn.start.getTime()) / 3_600_000).toBe(25);
    expect(localParts(autumn.start, berlin)).toMatchObject({ day: 26, hour: 0, minute: 0 });
  });

  it('resolves a wall time inside a spring gap to the end of the gap (as cron does), and an ambiguous autumn one to the earlier instant', () => {
    expect(instantOfLocal({ year: 2025, month: 3, day: 30, hour: 2, minute: 30 }, berlin).toISOString()).toBe('2025-03-30T01:00:00.000Z'); // 03:00 CEST
    expect(instantOfLocal({ year: 2025, month: 10, day: 26, hour: 2, minute: 30 }, berlin).toISOString()).toBe('2025-10-26T00:30:00.000Z'); // the first 02:30
    expect(nextLocalTime(new Date('2025-06-01T06:00:00Z'), 7 * 60, berlin).toISOString()).toBe('2025-06-02T05:00:00.000Z');
  });
});

describe('choosing the trigger by rules', () => {
  it.each([
    ['Would you prefer the blue one or the red one?', 'waiting_for_decision'],
    ['Here are two plans:\n1. Move fast\n2. Be careful\nWhich one do you want?', 'waiting_for_decision'],
    ['Let me know which option you choose.', 'waiting_for_decision'],
    ['What is your budget?', 'question_unanswered'],
    ['I drafted the outline. Next steps: the intro and the summary.', 'task_incomplete'],
    ['The migration is not finished yet; I still need to move the index.', 'task_incomplete'],
    ['Here is the answer. Have a great day.', 'check_in'],
    ['The flag is spelled `--dry-run?` in old docs. All done.', 'check_in'],
  ])('%s → %s', (reply, expected) => {
    expect(chooseTriggerByRules(reply).triggerType).toBe(expected);
  });
});
