import type { AutonomousTriggerType } from '../message-metadata.js';

/**
 * A follow-up timer: one durable, per-thread follow-up due at a time. It fires at most
 * once (I7). Its state only moves forward, and every move is a conditional update, so
 * two deliveries of one timer can never both fire it:
 *
 *   pending ──► fired        (its run started; a crash mid-run is finished, never redone)
 *      │
 *      ├──► cancelled        (a person's message, an API call, a newer follow-up)
 *      ├──► dropped          (quiet hours with mode drop; superseded by a user message)
 *      └──► skipped          (a cap, the budget, a pause, autonomy off, the evaluator)
 */
export const TIMER_STATES = ['pending', 'fired', 'cancelled', 'dropped', 'skipped'] as const;
export type TimerState = (typeof TIMER_STATES)[number];

export interface TimerRecord {
  id: string;
  threadId: string;
  userId: string;
  agentId: string;
  dueAt: string; // ISO 8601 UTC
  triggerType: AutonomousTriggerType;
  /** Why this follow-up: the rule or the evaluator's reasoning (never shown in the thread). */
  reason: string;
  /** Its ordinal in the silence it belongs to: 1 for the first follow-up after a person's message. */
  attempt: number;
  state: TimerState;
  /** Why it left `pending` (a cap, a cancel, …); null while pending or once fired normally. */
  stateReason: string | null;
  /**
   * The thread's last real user message time when it was scheduled (null: none yet).
   * A timer whose thread has a newer one is stale and never fires (I6).
   */
  scheduledAgainst: string | null;
  /** The run after which it was scheduled. */
  sourceRunId: string | null;
  /** The run that fired it (the latest, when a crashed fire was finished by another run). */
  runId: string | null;
  createdAt: string;
  updatedAt: string;
  firedAt: string | null;
}

/** The id of the synthetic message a timer's fire adds: the same for every delivery, so a turn is never added twice. */
export function followUpMessageId(timerId: string): string {
  return `follow-up-${timerId}`;
}
