/**
 * The approval records (I16), run against every backend (approval-repository-sqlite and
 * -postgres). Each case uses fresh ids, so cases share one open storage.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqlApprovalRepository } from '../../src/adapters/sql/approval-repository.js';
import type { SqlStorage } from '../../src/adapters/sql/sql-storage.js';
import type { NewApproval } from '../../src/app/approvals/approval-ports.js';
import { hashArguments } from '../../src/domain/tools/approval.js';

function at(minute: number): string {
  return new Date(Date.UTC(2026, 0, 1, 12, minute)).toISOString();
}

function newApproval(overrides: Partial<NewApproval> = {}): NewApproval {
  const args = { content: 'likes tea' };
  return {
    id: randomUUID(),
    userId: 'u-' + randomUUID().slice(0, 8),
    agentId: 'agent',
    threadId: randomUUID(),
    runId: randomUUID(),
    messageId: randomUUID(),
    toolCallId: 'call_' + randomUUID().slice(0, 6),
    tool: 'memory_write',
    arguments: args,
    argumentsHash: hashArguments(args),
    attended: false,
    requestedAt: at(0),
    expiresAt: at(60),
    ...overrides,
  };
}

export function approvalRepositoryContract(name: string, open: () => Promise<SqlStorage>): void {
  describe(`approval records on ${name}`, () => {
    let storage: SqlStorage;
    let approvals: SqlApprovalRepository;
    beforeAll(async () => {
      storage = await open();
      approvals = new SqlApprovalRepository(storage.context);
    });
    afterAll(async () => {
      await storage?.close();
    });

    it('I16: a replayed step finds its requests instead of asking twice', async () => {
      const first = newApproval();
      const second = newApproval({ userId: first.userId, threadId: first.threadId, messageId: first.messageId, runId: first.runId });
      const made = await approvals.request([first, second]);
      expect(made.created.map((record) => record.id)).toEqual([first.id, second.id]);
      const again = await approvals.request([{ ...first, id: randomUUID() }, { ...second, id: randomUUID() }]);
      expect(again.created).toEqual([]);
      expect(again.records.map((record) => record.id)).toEqual([first.id, second.id]);
      expect(again.records[0]).toMatchObject({ status: 'pending', execution: 'none', arguments: { content: 'likes tea' }, argumentsHash: first.argumentsHash, attended: false, expiresAt: at(60) });
      expect((await approvals.listStep(first.threadId, first.messageId)).map((record) => record.id).sort()).toEqual([first.id, second.id].sort());
    });

    it('I16: a step\'s approvals keep the order of its calls, whatever their ids', async () => {
      const first = newApproval();
      const step = { userId: first.userId, threadId: first.threadId, messageId: first.messageId, runId: first.runId, requestedAt: first.requestedAt };
      // Ids in the reverse of the calls' order: an order by id alone lists them backwards.
      const calls = ['e', 'd', 'c', 'b', 'a'].map((letter, index) => newApproval({ ...step, id: `${letter}-${randomUUID()}`, toolCallId: `call_${index}` }));
      await approvals.request(calls);
      expect((await approvals.listStep(first.threadId, first.messageId)).map((record) => record.toolCallId)).toEqual(['call_0', 'call_1', 'call_2', 'call_3', 'call_4']);
      // Newest first: the step's last call first.
      expect((await approvals.list(first.userId, { limit: 10, threadId: first.threadId })).map((record) => record.toolCallId)).toEqual(['call_4', 'call_3', 'call_2', 'call_1', 'call_0']);
      expect((await approvals.newestOfThread(first.threadId))?.toolCallId).toBe('call_4');
    });

    it('I16: the first decision wins atomically; a second finds it decided', async () => {
      const request = newApproval();
      await approvals.request([request]);
      const results = await Promise.all([
        approvals.decide(request.id, { status: 'approved', decidedBy: request.userId, channel: 'api', decidedAt: at(1) }),
        approvals.decide(request.id, { status: 'rejected', decidedBy: request.userId, channel: 'telegram', decidedAt: at(1), message: 'no' }),
      ]);
      expect(results.filter((result) => result !== undefined)).toHaveLength(1);
      const stored = await approvals.get(request.userId, request.id);
      expect(stored?.status).toBe(results[0] ? 'approved' : 'rejected');
      expect(await approvals.decide(request.id, { status: 'expired', decidedBy: 'system', channel: 'system', decidedAt: at(2) })).toBeUndefined();
    });

    it('I16: a decision made at or after the deadline does not win, in the same update; before it, it does', async () => {
      const late = newApproval();
      await approvals.request([late]);
      expect(await approvals.decide(late.id, { status: 'approved', decidedBy: late.userId, channel: 'api', decidedAt: at(60), beforeDeadline: at(60) })).toBeUndefined();
      expect((await approvals.getById(late.id))?.status).toBe('pending');
      expect(await approvals.decide(late.id, { status: 'approved', decidedBy: late.userId, channel: 'api', decidedAt: at(59), beforeDeadline: at(59) })).toMatchObject({ status: 'approved' });
    });

    it('I11, I16: decisions taken together are recorded together: one that cannot win leaves every one pending', async () => {
      const first = newApproval();
      const second = newApproval({ userId: first.userId, threadId: first.threadId, messageId: first.messageId, runId: first.runId });
      await approvals.request([first, second]);
      await approvals.decide(second.id, { status: 'rejected', decidedBy: first.userId, channel: 'api', decidedAt: at(1) });
      const approve = { status: 'approved' as const, decidedBy: first.userId, channel: 'langgraph' as const, decidedAt: at(2), beforeDeadline: at(2) };
      expect(await approvals.decideAll([{ id: first.id, decision: approve }, { id: second.id, decision: approve }])).toBeUndefined();
      expect((await approvals.getById(first.id))?.status).toBe('pending');
      expect((await approvals.getById(second.id))?.status).toBe('rejected');
      const third = newApproval({ userId: first.userId, threadId: first.threadId, messageId: first.messageId, runId: first.runId });
      await approvals.request([third]);
      const both = await approvals.decideAll([{ id: first.id, decision: approve }, { id: third.id, decision: { ...approve, status: 'edited', editedArguments: { content: 'x' } } }]);
      expect(both?.map((record) => record.status)).toEqual(['approved', 'edited']);
    });

    it('I12: another user never reads a request; the owner lists theirs newest first', async () => {
      const older = newApproval({ requestedAt: at(1) });
      const newer = newApproval({ userId: older.userId, requestedAt: at(2) });
      await approvals.request([older]);
      await approvals.request([newer]);
      expect(await approvals.get('someone-else', older.id)).toBeUndefined();
      expect((await approvals.list(older.userId, { limit: 10 })).map((record) => record.id)).toEqual([newer.id, older.id]);
      await approvals.decide(older.id, { status: 'edited', decidedBy: older.userId, channel: 'api', decidedAt: at(3), editedArguments: { content: 'likes green tea' } });
      expect((await approvals.list(older.userId, { limit: 10, status: 'pending' })).map((record) => record.id)).toEqual([newer.id]);
      expect(await approvals.get(older.userId, older.id)).toMatchObject({ status: 'edited', editedArguments: { content: 'likes green tea' }, channel: 'api', decidedAt: at(3) });
      expect((await approvals.listPending({ threadId: newer.threadId })).map((record) => record.id)).toEqual([newer.id]);
    });

    it('I16: an approved call is started once; its result is kept for a replay, with whether it worked', async () => {
      const request = newApproval();
      await approvals.request([request]);
      expect(await approvals.getById(request.id)).toMatchObject({ execution: 'none', result: null, outcome: null });
      expect(await approvals.beginExecution(request.id)).toBe(true);
      expect(await approvals.beginExecution(request.id)).toBe(false);
      await approvals.finishExecution(request.id, '{"saved":true}', 'succeeded');
      expect(await approvals.getById(request.id)).toMatchObject({ execution: 'done', result: '{"saved":true}', outcome: 'succeeded' });
    });

    it('I16: a call whose tool threw is kept as failed: a replayed step reads that it failed, not only its text', async () => {
      const request = newApproval();
      await approvals.request([request]);
      expect(await approvals.beginExecution(request.id)).toBe(true);
      await approvals.finishExecution(request.id, 'the tool failed: unknown time zone', 'failed');
      expect(await approvals.getById(request.id)).toMatchObject({ execution: 'done', result: 'the tool failed: unknown time zone', outcome: 'failed' });
      expect((await approvals.listStep(request.threadId, request.messageId))[0]).toMatchObject({ outcome: 'failed' });
    });
  });
}
