/**
 * I16: an approved call that ran in an earlier delivery of its step (a crash, or a cancel
 * mid-step) is reported as it went when the step runs again, never run twice: its stored
 * output with its stored outcome, and, for a call stored before outcomes were (schema
 * version 23), as unknown rather than as a success.
 */
import { describe, expect, it } from 'vitest';
import type { ApprovalGate } from '../../src/app/approvals/approval-ports.js';
import { runApprovedCall } from '../../src/agent/tools/tool-approval.js';
import { hashArguments, type ApprovalRecord, type ExecutionOutcome } from '../../src/domain/tools/approval.js';

const args = { timeZone: 'Nowhere/Atlantis' };

function finished(outcome: ExecutionOutcome | null): ApprovalRecord {
  return {
    id: 'a1', userId: 'alice', agentId: 'agent', threadId: 't', runId: 'r', messageId: 'm', toolCallId: 'call_zone', tool: 'current_time',
    arguments: args, argumentsHash: hashArguments(args), attended: true, requestedAt: '2026-01-01T12:00:00.000Z', expiresAt: '2026-01-01T13:00:00.000Z',
    status: 'approved', decidedBy: 'alice', channel: 'api', decidedAt: '2026-01-01T12:01:00.000Z', message: null, editedArguments: null,
    execution: 'done', result: 'the tool failed: unknown time zone', outcome,
  };
}

function gate(): ApprovalGate & { begun: number } {
  return {
    begun: 0,
    requestStep: async () => [],
    async beginExecution() {
      this.begun += 1;
      return false;
    },
    finishExecution: async () => undefined,
    reread: async () => undefined,
  };
}

describe('I16: an approved call replayed from its record', () => {
  const neverRun = async (): Promise<{ ok: boolean; output: string }> => {
    throw new Error('an approved call that ran must not run again');
  };

  it('a call whose tool threw reads as failed, with its output; it is not run again', async () => {
    const calls = gate();
    expect(await runApprovedCall(calls, finished('failed'), args, neverRun)).toEqual({ ran: true, ok: false, output: 'the tool failed: unknown time zone', status: 'failed', approvalId: 'a1', args });
    expect(calls.begun).toBe(0);
  });

  it('a call that worked reads as succeeded', async () => {
    expect(await runApprovedCall(gate(), { ...finished('succeeded'), result: '{"iso":"x"}' }, args, neverRun)).toMatchObject({ ran: true, ok: true, status: 'succeeded', output: '{"iso":"x"}' });
  });

  it('a call stored before outcomes were recorded reads as unknown, its output kept, never as a success', async () => {
    const outcome = await runApprovedCall(gate(), finished(null), args, neverRun);
    expect(outcome).toMatchObject({ ran: false, status: 'unknown', approvalId: 'a1' });
    expect(outcome.output).toContain('whether it worked was not recorded');
    expect(outcome.output).toContain('the tool failed: unknown time zone');
  });

  it('found finished on a re-read after a begin that lost (another delivery ran it): its outcome too', async () => {
    const calls = gate();
    calls.reread = async () => finished('failed');
    expect(await runApprovedCall(calls, { ...finished(null), execution: 'started', result: null }, args, neverRun)).toMatchObject({ ran: true, ok: false, status: 'failed' });
    expect(calls.begun).toBe(1);
  });
});
