import type { ApprovalChannel, ApprovalRecord, ApprovalStatus, DecidedStatus, ExecutionOutcome } from '../../domain/tools/approval.js';
import type { StorageTransaction } from '../job-queue.js';
import type { Iso } from '../ports.js';

export type NewApproval = Omit<ApprovalRecord, 'status' | 'decidedBy' | 'channel' | 'decidedAt' | 'message' | 'editedArguments' | 'execution' | 'result' | 'outcome'>;

export interface ApprovalDecisionWrite {
  status: DecidedStatus;
  decidedBy: string;
  channel: ApprovalChannel;
  decidedAt: Iso;
  message?: string | null;
  editedArguments?: Record<string, unknown> | null;
  /** A person's decision counts only while the deadline is later than this (in the same update: a late one never wins). */
  beforeDeadline?: Iso;
}

/**
 * What is written in a decision's own transaction, given the step of each decided request
 * as it stands there (every call of it, in order): the step's resume job, so that a
 * decision is never recorded without the resume it settles (I16).
 */
export type AlsoWithinDecided = (transaction: StorageTransaction, steps: ApprovalRecord[][]) => Promise<void>;

/** The approval records (I16). Every change of status is one conditional update: the first decision wins. */
export interface ApprovalRepository {
  /**
   * Record the requests of one step; a request that exists already (same thread, model
   * message and tool call, e.g. a replayed step) is kept as it is. Returns the step's records
   * and which were new.
   */
  request(approvals: NewApproval[]): Promise<{ records: ApprovalRecord[]; created: ApprovalRecord[] }>;
  /** Only the owner's (I12). */
  get(userId: string, id: string): Promise<ApprovalRecord | undefined>;
  getById(id: string): Promise<ApprovalRecord | undefined>;
  /** The owner's, newest first. */
  list(userId: string, options: { limit: number; status?: ApprovalStatus | undefined; threadId?: string | undefined }): Promise<ApprovalRecord[]>;
  /** Every call of one step (thread + model message). */
  listStep(threadId: string, messageId: string): Promise<ApprovalRecord[]>;
  listPending(options?: { threadId?: string }): Promise<ApprovalRecord[]>;
  /** The thread's newest request (the last call of its newest step), whoever owns it. */
  newestOfThread(threadId: string): Promise<ApprovalRecord | undefined>;
  /**
   * pending → decided, atomically; undefined when it was no longer pending (then read it to
   * see who won). `alsoWithin` commits with the decision, or its failure records none.
   */
  decide(id: string, decision: ApprovalDecisionWrite, alsoWithin?: AlsoWithinDecided): Promise<ApprovalRecord | undefined>;
  /**
   * Several decisions in one transaction: all of them win, or none is recorded (undefined:
   * one was no longer pending, or past its deadline; read them to see why).
   */
  decideAll(decisions: ReadonlyArray<{ id: string; decision: ApprovalDecisionWrite }>, alsoWithin?: AlsoWithinDecided): Promise<ApprovalRecord[] | undefined>;
  /** Before running an approved call: none → started, once. False when it was started before. */
  beginExecution(id: string): Promise<boolean>;
  /** After it ran: its output and whether it worked, together (a replayed step reports both). */
  finishExecution(id: string, result: string, outcome: ExecutionOutcome): Promise<void>;
}

/** One tool call of a step that needs a person's decision. */
export interface ApprovalAsk {
  toolCallId: string;
  tool: string;
  /** The real arguments: hashed, and redacted for display; never stored as they are. */
  args: Record<string, unknown>;
  timeoutMs: number;
}

/**
 * What the agent's tool loop needs of the approvals: ask for a step's calls (idempotent,
 * so a replayed step asks nothing twice), and record an approved call's execution before
 * and after it, so that it runs exactly once (I16).
 */
export interface ApprovalGate {
  requestStep(input: {
    run: { runId: string; threadId: string; userId: string; agentId: string };
    messageId: string;
    attended: boolean;
    calls: ApprovalAsk[];
  }): Promise<import('../../domain/tools/approval.js').ApprovalRecord[]>;
  beginExecution(id: string): Promise<boolean>;
  finishExecution(id: string, result: string, outcome: ExecutionOutcome): Promise<void>;
  /** Re-read one request (after a begin that lost, to find the result of the run that won). */
  reread(id: string): Promise<import('../../domain/tools/approval.js').ApprovalRecord | undefined>;
}
