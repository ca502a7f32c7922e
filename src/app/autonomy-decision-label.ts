import type { VigilEvent } from '../domain/events.js';

/**
 * A bounded label for an autonomy event, for metrics: reasons are partly free text
 * (a person replied, replaced by a newer follow-up), and a metric label must not grow
 * without bound.
 */
export function autonomyDecisionOf(event: VigilEvent): string | undefined {
  if (event.type === 'timer.schedule') return 'scheduled';
  if (event.type === 'timer.fire') return 'fired';
  if (event.type !== 'timer.cancel') return undefined;
  const reason = event.reason.toLowerCase();
  if (/^[a-z_]{1,40}$/.test(reason)) return reason; // already a code: cap_per_silence, quiet_hours, budget…
  if (reason.includes('quiet')) return 'quiet_hours';
  if (reason.includes('budget')) return 'budget';
  if (reason.includes('cap')) return 'cap';
  if (reason.includes('person') || reason.includes('user message')) return 'person_replied';
  if (reason.includes('replaced')) return 'replaced';
  if (reason.includes('owner') || reason.includes('pause')) return 'cancelled_by_owner';
  return 'other';
}
