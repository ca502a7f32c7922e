import { createHash } from 'node:crypto';
import { z } from 'zod';
import { stableJson } from '../planner/loop-bounds.js';

/**
 * A tool call waiting for a person's decision (I16). `pending` until one of: a person
 * approved it (`approved`, or `edited` with new arguments), refused it (`rejected`), nobody
 * answered in time (`expired`: never a refusal), or a person's new message made it moot
 * (`superseded`).
 */
export const APPROVAL_STATUSES = ['pending', 'approved', 'edited', 'rejected', 'expired', 'superseded'] as const;
export type ApprovalStatus = (typeof APPROVAL_STATUSES)[number];
export type DecidedStatus = Exclude<ApprovalStatus, 'pending'>;

export const APPROVAL_DECISIONS = ['approve', 'edit', 'reject'] as const;
export type ApprovalDecision = (typeof APPROVAL_DECISIONS)[number];

/** Where a decision came from. `system` is expiry and supersession. */
export const APPROVAL_CHANNELS = ['api', 'telegram', 'langgraph', 'system'] as const;
export type ApprovalChannel = (typeof APPROVAL_CHANNELS)[number];

/** Whether an approved call ran: recorded before and after, so a crash never runs it twice. */
export type ExecutionState = 'none' | 'started' | 'done';

/**
 * Whether an approved call that ran worked (its tool returned, or threw). Kept with its
 * result, so a replayed step reports it as it was. Null while it has not finished, and for
 * a call that finished before the outcome was recorded (schema version 23): unknown.
 */
export type ExecutionOutcome = 'succeeded' | 'failed';

export interface ApprovalRecord {
  id: string;
  userId: string;
  agentId: string;
  threadId: string;
  runId: string;
  /** The model's message that made the calls: every call of one step shares it. */
  messageId: string;
  toolCallId: string;
  tool: string;
  /** The arguments as shown to people: secrets redacted. */
  arguments: Record<string, unknown>;
  /** sha256 of the real arguments' stable JSON: proves which call was approved. */
  argumentsHash: string;
  /** The trigger of the run that asked: decides whether resuming is attended. */
  attended: boolean;
  requestedAt: string;
  expiresAt: string;
  status: ApprovalStatus;
  decidedBy: string | null;
  channel: ApprovalChannel | null;
  decidedAt: string | null;
  /** A reason for the model (a rejection's message). */
  message: string | null;
  /** Edited arguments, exactly as approved (the only arguments an edited call runs with). */
  editedArguments: Record<string, unknown> | null;
  execution: ExecutionState;
  /** The tool's output once it ran, so a replayed step reuses it instead of running again. */
  result: string | null;
  /** Whether it worked, once it ran: null before, or when not recorded (see ExecutionOutcome). */
  outcome: ExecutionOutcome | null;
}

export function hashArguments(args: unknown): string {
  return createHash('sha256').update(stableJson(args)).digest('hex');
}

/** A decision counts as the same one when it repeats a status with the same arguments. */
export function statusOfDecision(decision: ApprovalDecision): DecidedStatus {
  return decision === 'approve' ? 'approved' : decision === 'edit' ? 'edited' : 'rejected';
}

export const approvalDecisionBodySchema = z
  .object({
    decision: z.enum(APPROVAL_DECISIONS),
    arguments: z.record(z.string(), z.unknown()).optional(),
    message: z.string().trim().min(1).max(2000).optional(),
  })
  .strict()
  .superRefine((value, context) => {
    if (value.decision === 'edit' && value.arguments === undefined) context.addIssue({ code: 'custom', path: ['arguments'], message: 'an edit needs the new arguments' });
    if (value.decision !== 'edit' && value.arguments !== undefined) context.addIssue({ code: 'custom', path: ['arguments'], message: 'only an edit carries arguments' });
  });
export type ApprovalDecisionBody = z.infer<typeof approvalDecisionBodySchema>;

/** What the model reads in place of a tool result when the call did not run as asked. */
export function outcomeForModel(record: Pick<ApprovalRecord, 'status' | 'message' | 'tool'>): string {
  switch (record.status) {
    case 'rejected':
      return `The person rejected this ${record.tool} call; it was not run.${record.message ? ` Their message: ${JSON.stringify(record.message)}` : ''}`;
    case 'expired':
      return `Nobody answered the approval request for this ${record.tool} call before its deadline, so it was not run. This is not a refusal. Do not retry it on your own; tell the person what you wanted to do.`;
    case 'superseded':
      return `The person sent a new message before deciding on this ${record.tool} call, so it was not run. Answer their new message.`;
    default:
      return `This ${record.tool} call was not run.`;
  }
}
