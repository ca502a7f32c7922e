import type { AutonomousTriggerType } from '../message-metadata.js';
import { minutesOfClock, type AutonomyPolicy, type QuietHours } from './autonomy-policy.js';
import { localMinuteOfDay, localParts, nextLocalTime } from './zoned-time.js';

/**
 * When a follow-up is due: the trigger's delay, stretched by the backoff for each
 * follow-up already sent in this silence, clamped to [minDelayMs, maxDelayMs], then kept
 * out of quiet hours. Pure: `now` comes from the caller's clock.
 */

/** The delay of the `ordinal`-th follow-up of a silence (1 = the first). */
export function followUpDelayMs(policy: AutonomyPolicy, triggerType: AutonomousTriggerType, ordinal: number): number {
  const base = policy.delaysMs[triggerType];
  const stretched = base * policy.backoffMultiplier ** Math.max(0, ordinal - 1);
  return Math.round(Math.min(policy.maxDelayMs, Math.max(policy.minDelayMs, stretched)));
}

/** Whether an instant falls inside quiet hours ([start, end), possibly across midnight). */
export function inQuietHours(instant: Date, quietHours: QuietHours, timeZone: string): boolean {
  const minute = localMinuteOfDay(instant, timeZone);
  const start = minutesOfClock(quietHours.start);
  const end = minutesOfClock(quietHours.end);
  return start < end ? minute >= start && minute < end : minute >= start || minute < end;
}

/**
 * The instant the quiet hours containing `instant` end: when the wall clock next shows
 * their end. That is the end's first occurrence (a gap's end on a spring-forward day) —
 * or, inside the repeated hour of a fall-back day, after its first occurrence has passed,
 * its second one, minutes away, not the next day's.
 */
export function endOfQuietHours(instant: Date, quietHours: QuietHours, timeZone: string): Date {
  const end = minutesOfClock(quietHours.end);
  const next = nextLocalTime(instant, end, timeZone);
  // Where the wall clock reaches the end by running on from here (no change of offset on the way).
  const local = localParts(instant, timeZone);
  const minutesLeft = (end - (local.hour * 60 + local.minute) + 1440) % 1440;
  const runningOn = new Date(Math.floor(instant.getTime() / 60_000) * 60_000 + minutesLeft * 60_000);
  return runningOn.getTime() < next.getTime() && runningOn.getTime() >= instant.getTime() && !inQuietHours(runningOn, quietHours, timeZone) ? runningOn : next;
}

export type DuePlan =
  | { kind: 'due'; dueAt: Date; delayMs: number; deferredByQuietHours: boolean }
  | { kind: 'dropped'; dueAt: Date; reason: 'quiet_hours' };

/**
 * Quiet hours semantics: a follow-up whose due time falls inside quiet hours is moved to
 * the moment they end (mode `defer`, the default) or dropped (mode `drop`). Moving it
 * never makes it earlier, and the caps are still checked when it fires.
 */
export function planDueTime(policy: AutonomyPolicy, now: Date, delayMs: number): DuePlan {
  const dueAt = new Date(now.getTime() + delayMs);
  const quiet = policy.quietHours;
  if (!quiet || !inQuietHours(dueAt, quiet, policy.timeZone)) return { kind: 'due', dueAt, delayMs, deferredByQuietHours: false };
  if (quiet.mode === 'drop') return { kind: 'dropped', dueAt, reason: 'quiet_hours' };
  const moved = endOfQuietHours(dueAt, quiet, policy.timeZone);
  return { kind: 'due', dueAt: moved, delayMs: moved.getTime() - now.getTime(), deferredByQuietHours: true };
}
