import { z } from 'zod';

/** Why a run happens. */
/** `check_in`: a one-shot timer the agent set itself with a tool (schedule_check_in). */
export const RUN_TRIGGERS = ['user', 'autonomy', 'cron', 'webhook', 'channel', 'heartbeat', 'check_in'] as const;
export type RunTrigger = (typeof RUN_TRIGGERS)[number];
export const runTriggerSchema = z.enum(RUN_TRIGGERS);

/** The single carrier of run metadata from every entry point. */
export interface RunContext {
  readonly runId: string;
  readonly threadId: string;
  readonly userId: string;
  readonly agentId: string;
  readonly trigger: RunTrigger;
  readonly meta: Readonly<Record<string, unknown>>;
  readonly requestedAt: string; // ISO 8601 UTC
  readonly correlationId: string;
}

/** `interrupted`: the run stopped to wait for a person (an approval, I16); it never counts as finished. */
export const RUN_STATUSES = ['running', 'succeeded', 'failed', 'cancelled', 'interrupted'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
