import type { AutonomyPolicy } from './autonomy-policy.js';
import { inQuietHours } from './follow-up-timing.js';

/**
 * Why a follow-up did not happen. Each one is recorded on the timer (state + reason)
 * and logged, so that "why did the agent not follow up?" always has an answer.
 */
export type SkipReason =
  | 'autonomy_disabled' // the agent's policy is off (now)
  | 'paused' // the thread's autonomy is paused
  | 'superseded_by_user_message' // a real user message arrived after it was scheduled (I6)
  | 'quiet_hours'
  | 'cap_per_silence'
  | 'cap_per_day'
  | 'budget' // the agent's daily model-call budget is spent
  | 'evaluator_declined' // the model evaluator said no follow-up is needed
  | 'no_person'; // nobody has written in the thread (a schedule's or a webhook's own): no silence to follow up

export interface FollowUpCounts {
  /** Follow-ups already fired since the thread's last real user message. */
  firedThisSilence: number;
  /** Follow-ups already fired on this thread during the current local day. */
  firedToday: number;
}

/**
 * The caps a follow-up must pass before any model is called (I5). Quiet hours come
 * first: they say "not now" rather than "not again", so a deferring policy reschedules.
 */
export function checkCaps(policy: AutonomyPolicy, now: Date, counts: FollowUpCounts): { allowed: true } | { allowed: false; reason: SkipReason } {
  if (policy.quietHours && inQuietHours(now, policy.quietHours, policy.timeZone)) return { allowed: false, reason: 'quiet_hours' };
  if (counts.firedThisSilence >= policy.maxPerSilence) return { allowed: false, reason: 'cap_per_silence' };
  if (counts.firedToday >= policy.maxPerDay) return { allowed: false, reason: 'cap_per_day' };
  return { allowed: true };
}
