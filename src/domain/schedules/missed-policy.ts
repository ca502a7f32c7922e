/**
 * What a fire found late (the server was down when it came due) does: `skip` records it
 * as missed and runs nothing; `run_once` runs once, however many fires were missed.
 */
export const MISSED_POLICIES = ['skip', 'run_once'] as const;
export type MissedPolicy = (typeof MISSED_POLICIES)[number];

/** A fire delivered more than this after its time counts as missed, not merely late. */
export const MISSED_GRACE_MS = 60_000;

export function isMissed(scheduledFor: Date, now: Date, graceMs = MISSED_GRACE_MS): boolean {
  return now.getTime() - scheduledFor.getTime() > graceMs;
}
