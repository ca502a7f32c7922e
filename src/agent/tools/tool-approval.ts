import { interrupt } from '@langchain/langgraph';
import type { Logger } from 'pino';
import type { ApprovalAsk, ApprovalGate } from '../../app/approvals/approval-ports.js';
import { hashArguments, outcomeForModel, type ApprovalRecord } from '../../domain/tools/approval.js';

/**
 * The approval path every agent kind shares (I16): ask for a step's calls and wait
 * durably with LangGraph's interrupt(), then run each approved call exactly once, with
 * exactly the approved arguments. The chat tool loop and the planner's executor both go
 * through here; the records (ApprovalService) are the one approval engine.
 */

/**
 * Why a call the policy marks `ask` is not put to a person but answered at once: its
 * arguments do not fit the tool's schema, so a person could only approve a failure (or
 * edit a call the model never learns from). The refusal the model gets, or null when the
 * call may be asked. The chat tool loop and the planner's executor both check here.
 */
export function unaskableCall(toolbox: { validate(name: string, args: Record<string, unknown>): string | null }, tool: string, args: Record<string, unknown>): string | null {
  const problem = toolbox.validate(tool, args);
  return problem === null ? null : `the arguments do not fit ${tool}: ${problem}. It was not run and nobody was asked; call it again with arguments that fit.`;
}

/** The interrupt's value: LangChain's human-in-the-loop shape, plus vigil's approval ids. */
export interface ToolApprovalInterrupt {
  type: 'tool_approval';
  /**
   * The step the approvals belong to (their `messageId`), when it is not the thread's last
   * message: a planner step has no model message of its own in the thread.
   */
  step?: string;
  action_requests: Array<{ name: string; args: unknown; description: string }>;
  review_configs: Array<{ action_name: string; allowed_decisions: string[] }>;
  approvals: Array<{ id: string; tool_call_id: string; tool: string; expires_at: string }>;
}

export interface StepApprovalInput {
  run: { runId: string; threadId: string; userId: string; agentId: string };
  /** The key of the step: every call of it shares it (the chat's model message id, or a planner step's id). */
  step: string;
  attended: boolean;
  calls: ApprovalAsk[];
  /** Put the step key in the interrupt value (for graphs whose last message is not the step). */
  stepInInterrupt?: boolean;
}

/**
 * Ask for the step's calls (idempotent: a replayed step asks nothing twice) and, while any
 * is pending, stop the run with interrupt(): it ends `interrupted`, the checkpoint keeps the
 * step, and the node runs again once every call is decided, reading the decisions from
 * their records, which are the truth (a resume value is only a signal). Returns the
 * decided records by tool call id.
 */
export async function awaitStepApproval(gate: ApprovalGate, input: StepApprovalInput, log: Logger): Promise<Map<string, ApprovalRecord>> {
  const records = await gate.requestStep({ run: input.run, messageId: input.step, attended: input.attended, calls: input.calls });
  if (records.some((record) => record.status === 'pending')) {
    log.info({ approvals: records.map((record) => record.id) }, 'tool calls wait for a person\'s approval');
    interrupt<ToolApprovalInterrupt>(approvalInterruptValue(records, input.stepInInterrupt ? input.step : undefined));
  }
  return new Map(records.map((record) => [record.toolCallId, record]));
}

export function approvalInterruptValue(records: readonly ApprovalRecord[], step?: string): ToolApprovalInterrupt {
  const pending = records.filter((record) => record.status === 'pending');
  return {
    type: 'tool_approval',
    ...(step !== undefined ? { step } : {}),
    action_requests: pending.map((record) => ({ name: record.tool, args: record.arguments, description: `Tool call ${record.tool} waits for approval (approval ${record.id})` })),
    review_configs: pending.map((record) => ({ action_name: record.tool, allowed_decisions: ['approve', 'edit', 'reject'] })),
    approvals: pending.map((record) => ({ id: record.id, tool_call_id: record.toolCallId, tool: record.tool, expires_at: record.expiresAt })),
  };
}

/** What became of a call that needed approval. `args` is what it ran with, when it ran. */
export type ApprovedCallOutcome =
  | { ran: true; ok: boolean; output: string; status: 'succeeded' | 'failed'; approvalId: string; args: Record<string, unknown> }
  | { ran: false; output: string; status: string; approvalId?: string; args?: Record<string, unknown> };

/**
 * Run a call that needed approval, if it was approved: exactly once (the record's
 * execution state, set before and after, survives a crash), with exactly the approved
 * arguments (the call's own, their hash checked, or the person's edit). Anything else
 * (rejected, expired, superseded) becomes what the model reads instead of a result.
 */
export async function runApprovedCall(
  gate: ApprovalGate,
  record: ApprovalRecord | undefined,
  callArgs: Record<string, unknown>,
  invoke: (args: Record<string, unknown>) => Promise<{ ok: boolean; output: string }>,
): Promise<ApprovedCallOutcome> {
  if (!record) return { ran: false, output: 'no approval was recorded for this call; it was not run', status: 'refused' };
  if (record.status !== 'approved' && record.status !== 'edited') return { ran: false, output: outcomeForModel(record), status: record.status, approvalId: record.id };
  const args = record.status === 'edited' && record.editedArguments ? record.editedArguments : callArgs;
  if (record.status === 'approved' && hashArguments(callArgs) !== record.argumentsHash) {
    return { ran: false, output: 'the arguments differ from the ones approved; the call was not run', status: 'refused', approvalId: record.id };
  }
  if (record.execution === 'done' && record.result !== null) return ranBefore(record, args);
  if (!(await gate.beginExecution(record.id))) {
    // Another delivery of this step ran it, or a crash cut its run short: never twice.
    const current = await gate.reread(record.id);
    if (current?.execution === 'done' && current.result !== null) return ranBefore(current, args);
    return { ran: false, output: 'this approved call was started before the server stopped; whether it finished is unknown, and it is not run again', status: 'unknown', approvalId: record.id, args };
  }
  const result = await invoke(args);
  await gate.finishExecution(record.id, result.output, result.ok ? 'succeeded' : 'failed');
  return { ran: true, ok: result.ok, output: result.output, status: result.ok ? 'succeeded' : 'failed', approvalId: record.id, args };
}

/**
 * A call that ran in an earlier delivery of its step (a crash, or a cancel mid-step, cut
 * that step short): its stored output, reported as it went. Without its outcome a call whose
 * tool threw read as `succeeded`. A call recorded before outcomes were (schema version 23)
 * is not called a success: unknown, its output given as it was.
 */
function ranBefore(record: ApprovalRecord, args: Record<string, unknown>): ApprovedCallOutcome {
  const output = record.result ?? '';
  if (record.outcome === 'succeeded' || record.outcome === 'failed') return { ran: true, ok: record.outcome === 'succeeded', output, status: record.outcome, approvalId: record.id, args };
  return { ran: false, output: `this approved call ran before the server restarted, and whether it worked was not recorded; it is not run again. Its output was: ${output}`, status: 'unknown', approvalId: record.id, args };
}
