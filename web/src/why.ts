import type { Hook, Run, Schedule } from './api.js';

const FOLLOW_UP_REASONS: Record<string, string> = {
  check_in: 'checking in',
  question_unanswered: 'question left unanswered',
  task_incomplete: 'task left incomplete',
  waiting_for_decision: 'waiting for a decision',
};

/** The schedules' and webhooks' names a reason is told with; `loaded: false` while they are being fetched. */
export interface TriggerNames {
  schedules: Schedule[];
  hooks: Hook[];
  loaded?: boolean;
}

/**
 * Why a reply happened without a person asking, from its run's trigger and meta:
 * "followed up: question left unanswered", "schedule: daily-digest", "webhook: github push".
 * Undefined for a person's own turn.
 */
export function whyOf(run: Pick<Run, 'trigger' | 'meta'> | undefined, names: TriggerNames): string | undefined {
  if (!run || run.trigger === 'user') return undefined;
  const meta = run.meta;
  switch (run.trigger) {
    case 'autonomy': {
      // Until the run's meta is loaded (a reply already streaming), just "followed up".
      if (typeof meta.trigger_type !== 'string') return 'followed up';
      return `followed up: ${FOLLOW_UP_REASONS[meta.trigger_type] ?? meta.trigger_type.replace(/_/g, ' ')}`;
    }
    case 'cron': {
      // Until the names are loaded: the kind alone, never a raw id that the name then replaces.
      if (names.loaded === false) return 'schedule';
      const schedule = names.schedules.find((candidate) => candidate.id === meta.schedule_id);
      return `schedule: ${schedule?.name ?? String(meta.schedule_id ?? 'a schedule')}`;
    }
    case 'webhook': {
      if (names.loaded === false) return 'webhook';
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
