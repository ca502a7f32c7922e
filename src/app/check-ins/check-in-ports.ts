import type { StorageTransaction } from '../job-queue.js';
import type { Iso } from '../ports.js';

export const CHECK_IN_STATES = ['pending', 'fired', 'cancelled', 'skipped'] as const;
export type CheckInState = (typeof CHECK_IN_STATES)[number];

/** A one-shot timer the agent set itself, with its reason; a person's message does not cancel it. */
export interface CheckInRecord {
  id: string;
  userId: string;
  agentId: string;
  threadId: string;
  dueAt: Iso;
  reason: string;
  setAt: Iso;
  setByRunId: string | null;
  state: CheckInState;
  stateReason: string | null;
  runId: string | null;
  firedAt: Iso | null;
  updatedAt: Iso;
}

export type NewCheckIn = Pick<CheckInRecord, 'id' | 'userId' | 'agentId' | 'threadId' | 'dueAt' | 'reason' | 'setAt' | 'setByRunId'>;

/** What became of a `fire`: fired; or `not_pending` (cancelled or fired meanwhile); or `refused` by `alsoWithin`. */
export type CheckInFiring = { outcome: 'fired'; checkIn: CheckInRecord } | { outcome: 'not_pending' } | { outcome: 'refused' };

export interface CheckInRepository {
  /** Insert it, and in the same transaction whatever `alsoWithin` writes (its job): neither exists without the other. */
  create(checkIn: NewCheckIn, alsoWithin: (transaction: StorageTransaction) => Promise<void>): Promise<CheckInRecord>;
  get(id: string): Promise<CheckInRecord | undefined>;
  listByThread(userId: string, threadId: string, options: { pendingOnly: boolean; limit: number }): Promise<CheckInRecord[]>;
  /** A conditional move: undefined when it was no longer in `from` (another delivery won). */
  transition(id: string, from: CheckInState, to: CheckInState, fields: { stateReason?: string | null; runId?: string | null; firedAt?: Iso | null; dueAt?: Iso }, now: Iso): Promise<CheckInRecord | undefined>;
  /**
   * pending → fired and, in the same transaction, `alsoWithin` (the model-call budget's
   * charge): both happen or neither. Not pending any more (a cancel won): nothing runs and
   * nothing is charged. `alsoWithin` false: rolled back, still pending.
   */
  fire(id: string, fields: { runId: string; firedAt: Iso }, now: Iso, alsoWithin: (transaction: StorageTransaction) => Promise<boolean>): Promise<CheckInFiring>;
  countFiredBetween(threadId: string, from: Iso, to: Iso): Promise<number>;
}
