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

export interface CheckInRepository {
  /** Insert it, and in the same transaction whatever `alsoWithin` writes (its job): neither exists without the other. */
  create(checkIn: NewCheckIn, alsoWithin: (transaction: StorageTransaction) => Promise<void>): Promise<CheckInRecord>;
  get(id: string): Promise<CheckInRecord | undefined>;
  listByThread(userId: string, threadId: string, options: { pendingOnly: boolean; limit: number }): Promise<CheckInRecord[]>;
  /** A conditional move: undefined when it was no longer in `from` (another delivery won). */
  transition(id: string, from: CheckInState, to: CheckInState, fields: { stateReason?: string | null; runId?: string | null; firedAt?: Iso | null; dueAt?: Iso }, now: Iso): Promise<CheckInRecord | undefined>;
  countFiredBetween(threadId: string, from: Iso, to: Iso): Promise<number>;
}
