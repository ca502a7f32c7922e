/**
 * What the LangGraph Platform API keeps beside vigil's own records (migration 12). The
 * runs themselves are vigil's runs (`runs`), started by the run coordinator; a protocol
 * run row adds what the protocol asks for and exists before the run has its thread's lock.
 */
import type { Iso, RunRecord } from '../ports.js';
import type { StorageTransaction } from '../job-queue.js';

/** `within`: written in that open transaction (the one making the thread it belongs to). */
export interface WriteOptions {
  within?: StorageTransaction | undefined;
}

/**
 * `pending`: waiting for the thread; `claimed`: it has the thread and its owner is writing
 * vigil's run record (a moment); `started`: vigil's run record tells the rest;
 * `cancelled`/`failed`: it never started.
 */
export type ProtocolRunState = 'pending' | 'claimed' | 'started' | 'cancelled' | 'failed';

export interface ProtocolRunRecord {
  runId: string;
  userId: string;
  threadId: string;
  assistantId: string;
  metadata: Record<string, unknown>;
  multitaskStrategy: string;
  state: ProtocolRunState;
  /** The vigil run this protocol run follows when it is not its own (a resume after approvals); null: the same id. */
  vigilRunId: string | null;
  /**
   * A resume's step: the id of the model message whose waiting tool calls it decides; null
   * for a person's message. What finds the run that continued the thread when the process
   * that recorded the decisions is gone (ProtocolRunManager.reconcile).
   */
  resumeStep: string | null;
  /** Why it ended before it started (`cancelled`/`failed`), when known. */
  error: ProtocolRunError | null;
  /**
   * The process that runs it (InstancePresence.id): a person's message waiting for its
   * thread lives in that process's memory only, so the run never starts once that process is
   * gone. Null on rows written before owners were recorded.
   */
  owner: string | null;
  createdAt: Iso;
}

export interface ProtocolRunError {
  code: string;
  message: string;
}

/** What a thread's protocol status is read from (see protocol-threads' statusOf). */
export interface ThreadStatusFacts {
  /** The thread's newest vigil run (of any trigger), if any. */
  newestRun: Pick<RunRecord, 'status' | 'requestedAt'> | null;
  /** The thread's newest protocol run row, if any. */
  newestProtocolRun: Pick<ProtocolRunRecord, 'state' | 'vigilRunId' | 'createdAt'> | null;
  /** Whether tool calls on the thread wait for a person's decision. */
  waitingForDecision: boolean;
}

export interface ProtocolStore {
  /** Only the owner's rows (I12). */
  threadMetadata(userId: string, threadId: string): Promise<Record<string, unknown>>;
  /** Every thread of the user that has metadata: thread id → metadata. */
  threadMetadataOf(userId: string): Promise<Map<string, Record<string, unknown>>>;
  setThreadMetadata(userId: string, threadId: string, metadata: Record<string, unknown>, now: Iso, options?: WriteOptions): Promise<void>;
  /** Point a thread with no messages yet at another agent (a protocol thread is bound at its first run). */
  rebindEmptyThread(userId: string, threadId: string, agentId: string, now: Iso): Promise<boolean>;
  createRun(run: ProtocolRunRecord, options?: WriteOptions): Promise<void>;
  /** `error`: why it ended without starting (for `cancelled`/`failed`). */
  setRunState(runId: string, state: ProtocolRunState, vigilRunId?: string, error?: ProtocolRunError): Promise<void>;
  /**
   * Move the run from `from` to `to` only if it is still in `from` (one conditional write):
   * true when this call moved it. Where two processes may decide (the owner starting a
   * queued run, another ending it because that owner looks gone), the first write wins and
   * the other learns it lost.
   */
  moveRun(runId: string, from: ProtocolRunState, to: ProtocolRunState, error?: ProtocolRunError): Promise<boolean>;
  getRun(userId: string, runId: string): Promise<ProtocolRunRecord | undefined>;
  listRuns(userId: string, threadId: string, options: { limit: number; offset: number }): Promise<ProtocolRunRecord[]>;
  /**
   * For each of these threads of the user, in one query: what its status is read from. A
   * thread id that is not the user's is absent (I12). Thread search and count read a page
   * of threads at a time with it, rather than three queries per thread.
   */
  statusFactsOf(userId: string, threadIds: readonly string[]): Promise<Map<string, ThreadStatusFacts>>;
}

/** The row of a protocol run about to start: `pending` until it has its thread. */
export function newRunRecord(run: { runId: string; userId: string; threadId: string; agentId: string; metadata: Record<string, unknown>; multitaskStrategy: string; resumeStep?: string | null; owner?: string | null }): ProtocolRunRecord {
  return {
    runId: run.runId,
    userId: run.userId,
    threadId: run.threadId,
    assistantId: run.agentId,
    metadata: run.metadata,
    multitaskStrategy: run.multitaskStrategy,
    state: 'pending',
    vigilRunId: null,
    resumeStep: run.resumeStep ?? null,
    error: null,
    owner: run.owner ?? null,
    createdAt: new Date().toISOString(),
  };
}
