import type { Hook, Run, Schedule } from './api.js';

const FOLLOW_UP_REASONS: Record<string, string> = {
  check_in: 'checking in',
  question_unanswered: 'question left unanswered',
  task_incomplete: 'task left incomplete',
  waiting_for_decision: 'waiting for a decision',
};

/**
 * Why a reply happened without a person asking, from its run's trigger and meta:
 * "followed up: question left unanswered", "schedule: daily-digest", "webhook: github push".
 * Undefined for a person's own turn.
 */
export function whyOf(run: Pick<Run, 'trigger' | 'meta'> | undefined, names: { schedules: Schedule[]; hooks: Hook[] }): string | undefined {
  if (!run || run.trigger === 'user') return undefined;
  const meta = run.meta;
  switch (run.trigger) {
    case 'autonomy': {
      // Until the run's meta is loaded (a reply already streaming), just "followed up".
      if (typeof meta.trigger_type !== 'string') return 'followed up';
      return `followed up: ${FOLLOW_UP_REASONS[meta.trigger_type] ?? meta.trigger_type.replace(/_/g, ' ')}`;
    }
    case 'cron': {
      const schedule = names.schedules.find((candidate) => candidate.id === meta.schedule_id);
      return `schedule: ${schedule?.name ?? String(meta.schedule_id ?? 'a schedule')}`;
    }
    case 'webhook': {
      const hook = names.hooks.find((candidate) => candidate.id === meta.hook_id);
      return `webhook: ${hook?.name ?? String(meta.hook_id ?? 'a webhook')}`;
    }
    case 'channel':
      return `${typeof meta.channel === 'string' ? meta.channel : 'Telegram'} message`;
    case 'heartbeat':
      return 'plan check';
    default:
      return run.trigger;
  }
}
