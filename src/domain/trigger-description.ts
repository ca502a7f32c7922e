import type { RunTrigger } from './run-context.js';

/**
 * Why the agent spoke, in words a person reads beside the reply ("followed up: question
 * left unanswered", "schedule: daily-digest"). Built from a run's stored meta (already
 * validated and redacted), never from message text. One function for every client
 * (terminal chat, web app), so they say the same thing.
 */
const LABELS: Record<RunTrigger, string> = {
  user: 'you asked',
  autonomy: 'followed up',
  cron: 'schedule',
  webhook: 'webhook',
  channel: 'chat channel',
  heartbeat: 'plan check',
  check_in: 'check-in the agent set',
};

const FOLLOW_UP_REASONS: Record<string, string> = {
  question_unanswered: 'question left unanswered',
  task_incomplete: 'task left incomplete',
  waiting_for_decision: 'waiting for your decision',
  check_in: 'checking in',
};

export function describeTrigger(trigger: RunTrigger, meta: Readonly<Record<string, unknown>> = {}, names: { schedule?: string; hook?: string } = {}): string {
  const label = LABELS[trigger];
  const detail = detailOf(trigger, meta, names);
  return detail ? `${label}: ${detail}` : label;
}

function detailOf(trigger: RunTrigger, meta: Readonly<Record<string, unknown>>, names: { schedule?: string; hook?: string }): string | undefined {
  const text = (key: string) => (typeof meta[key] === 'string' && meta[key] ? (meta[key] as string) : undefined);
  switch (trigger) {
    case 'autonomy': {
      const type = text('trigger_type');
      return (type && FOLLOW_UP_REASONS[type]) ?? type?.replace(/_/g, ' ');
    }
    case 'cron':
      return names.schedule ?? text('schedule_id');
    case 'webhook':
      return names.hook ?? text('hook_id');
    case 'channel':
      return text('channel');
    case 'heartbeat':
      return text('priority') ? `${text('priority')} priority` : undefined;
    default:
      return undefined;
  }
}
