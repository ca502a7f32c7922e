import type { AutonomousTriggerType } from '../../domain/message-metadata.js';
import type { TimerRecord, TimerState } from '../../domain/autonomy/timer.js';
import type { StorageTransaction } from '../job-queue.js';
import type { Iso } from '../ports.js';

/**
 * What autonomy needs from storage: timers, each thread's autonomy state and the daily
 * model-call budget. Every state change is a conditional update, so concurrent
 * deliveries, instances and a person's message can race without a follow-up firing
 * twice or a cancelled one firing at all (I6, I7).
 */
export interface NewTimer {
  id: string;
  threadId: string;
  userId: string;
  agentId: string;
  dueAt: Iso;
  triggerType: AutonomousTriggerType;
  reason: string;
  attempt: number;
  /** `pending` for a real follow-up; `dropped`/`skipped` to record one that will not happen, and why. */
  state: Extract<TimerState, 'pending' | 'dropped' | 'skipped'>;
  stateReason: string | null;
  scheduledAgainst: Iso | null;
  sourceRunId: string | null;
}

export interface TimerTransitionFields {
  stateReason?: string | null;
  runId?: string | null;
  firedAt?: Iso | null;
}

export interface AutonomyThreadState {
  paused: boolean;
  /** When the last real user message was received (set on receipt, before it is processed). */
  lastUserMessageAt: Iso | null;
}

export interface TimerRepository {
  /**
   * Record a timer. A pending one replaces the thread's pending one (returned as
   * `replaced`, now cancelled), and `alsoWithin` runs in the same transaction — the job
   * queue schedules its job there, so a timer row never exists without its job.
   */
  insert(timer: NewTimer, now: Iso, alsoWithin?: (transaction: StorageTransaction) => Promise<void>): Promise<{ timer: TimerRecord; replaced: TimerRecord[] }>;
  get(timerId: string): Promise<TimerRecord | undefined>;
  /** Only the owner's timer (I12). */
  getForUser(userId: string, timerId: string): Promise<TimerRecord | undefined>;
  /** Newest first. */
  listByThread(userId: string, threadId: string, options: { states?: readonly TimerState[]; limit: number }): Promise<TimerRecord[]>;
  /** The pending timers of an agent, only the owner's (I12), by id: page on with `afterId`, the last id of the previous page. */
  listPendingByAgent(userId: string, agentId: string, options: { afterId?: string; limit: number }): Promise<TimerRecord[]>;
  /** Move a timer from `from` to `to`; undefined when it was not in `from` (someone else moved it first). */
  transition(timerId: string, from: TimerState, to: TimerState, fields: TimerTransitionFields, now: Iso): Promise<TimerRecord | undefined>;
  /** A pending timer's new due time (with its job rescheduled in the same transaction); undefined when no longer pending. */
  reschedule(timerId: string, dueAt: Iso, reason: string, now: Iso, alsoWithin?: (transaction: StorageTransaction) => Promise<void>): Promise<TimerRecord | undefined>;
  /** Cancel every pending timer of a thread; returns those cancelled. */
  cancelPending(threadId: string, reason: string, now: Iso): Promise<TimerRecord[]>;
  /**
   * Timers that should have been handled by now: pending ones due before `dueBefore`, and
   * ones fired in [firedSince, firedBefore) whose run is missing or still marked running.
   */
  listOverdue(options: { dueBefore: Iso; firedSince: Iso; firedBefore: Iso; limit: number }): Promise<TimerRecord[]>;
  /** Follow-ups fired on a thread against this last-user-message time (one silence). */
  countFiredInSilence(threadId: string, scheduledAgainst: Iso | null): Promise<number>;
  /** Follow-ups fired on a thread in [from, to). */
  countFiredBetween(threadId: string, from: Iso, to: Iso): Promise<number>;

  threadState(threadId: string): Promise<AutonomyThreadState>;
  setPaused(threadId: string, userId: string, paused: boolean, now: Iso): Promise<void>;
  /** Note a real user message on receipt; the time never moves backwards. */
  noteUserMessage(threadId: string, userId: string, at: Iso): Promise<void>;

  /**
   * Reserve `count` model calls of an agent's daily budget: true when they fit under
   * `limit` (and are now counted), false when they would not (nothing is counted).
   * `within`: counted in the caller's transaction, so they are counted only if it commits.
   */
  reserveModelCalls(userId: string, agentId: string, day: string, count: number, limit: number, options?: { within?: StorageTransaction }): Promise<boolean>;
  modelCallsUsed(userId: string, agentId: string, day: string): Promise<number>;
}
