import { expect, it, describe } from 'vitest';
import { SqlCheckInRepository } from '../../src/adapters/sql/check-in-repository.js';
import type { SqlStorage } from '../../src/adapters/sql/sql-storage.js';
import { SqlTimerRepository } from '../../src/adapters/sql/timer-repository.js';
import { CHECK_IN_QUEUE, CheckInService } from '../../src/app/check-ins/check-in-service.js';
import type { DueJob } from '../../src/app/job-queue.js';
import { PREEMPTED_REASON, STOPPING_REASON } from '../../src/app/run-coordinator.js';
import { localDay } from '../../src/domain/autonomy/zoned-time.js';
import { ALICE, BOB, startTestServer, type Backend, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';

type Json = Record<string, any>;

const policy = { enabled: true, minDelayMs: 10, maxDelayMs: 600_000, maxPerDay: 100, modelCallsPerDay: 1000, busyRetryMs: 100 };

/**
 * A check-in's run, like a follow-up's: pre-empted by a person's message (I8), and, when a
 * shutdown or a crash cuts it short, finished after the restart, once (I7: the agent
 * promised it). The demo model, paced so a run is still going when the test acts.
 */
export function checkInRunsSuite(backend: () => Backend): void {
  describe('check-in runs', () => {
    async function setUp(server: TestServer): Promise<{ agentId: string; threadId: string }> {
      const agentId = `c-${Math.random().toString(36).slice(2, 10)}`;
      expect((await server.request('POST', '/api/agents', { body: { id: agentId, name: 'c', autonomy: policy } })).status).toBe(201);
      const threadId = (await server.request('POST', '/api/threads', { body: { agentId } })).body.id as string;
      return { agentId, threadId };
    }
    const runsOf = async (server: TestServer, threadId: string) => ((await server.request('GET', `/api/threads/${threadId}/runs?limit=100`)).body.runs as Json[]).reverse();

    it("I7: a check-in whose run a shutdown cut short is finished after the restart, once", async () => {
      let server = await startTestServer(backend(), { demoTokenDelayMs: 80 });
      try {
        const { agentId, threadId } = await setUp(server);
        const checkIn = await server.services.checkIns.schedule({ userId: ALICE.id, agentId, threadId, runId: 'r0' }, { inSeconds: 0.2, reason: 'see how the deploy went' });
        await waitFor(async () => (await runsOf(server, threadId)).some((run) => run.trigger === 'check_in' && run.status === 'running'), 10_000, 'the check-in run to start');
        server = await server.restart(); // a graceful stop cancels the run in flight
        await waitFor(async () => (await runsOf(server, threadId)).some((run) => run.status === 'succeeded'), 20_000, 'the check-in to be finished after the restart');
        const runs = await runsOf(server, threadId);
        expect(runs.map((run) => [run.trigger, run.status, run.reason])).toEqual([
          ['check_in', 'cancelled', STOPPING_REASON],
          ['check_in', 'succeeded', null],
        ]);
        // One reply for the one promise; the prompt stays internal.
        const history = (await server.request('GET', `/api/threads/${threadId}/history`)).body.messages as Json[];
        expect(history.map((message) => message.role)).toEqual(['assistant']);
        const [record] = (await server.request('GET', `/api/threads/${threadId}/check-ins?state=all`)).body.checkIns as Json[];
        expect(record).toMatchObject({ id: checkIn.id, state: 'fired', runId: runs[1]!.id });
        expect((await server.request('GET', `/api/threads/${threadId}/check-ins`, { token: BOB.token })).status).toBe(404);
      } finally {
        await server.destroy();
      }
    });

    it("I8: a person's message during a check-in run pre-empts it; the check-in is not run again", async () => {
      const server = await startTestServer(backend(), { demoTokenDelayMs: 80 });
      try {
        const { agentId, threadId } = await setUp(server);
        const checkIn = await server.services.checkIns.schedule({ userId: ALICE.id, agentId, threadId, runId: 'r0' }, { inSeconds: 0.2, reason: 'ask how it went' });
        await waitFor(async () => (await runsOf(server, threadId)).some((run) => run.trigger === 'check_in' && run.status === 'running'), 10_000, 'the check-in run to start');
        expect((await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'I am back' } })).status).toBe(200);
        expect((await runsOf(server, threadId)).map((run) => [run.trigger, run.status, run.reason])).toEqual([
          ['check_in', 'cancelled', PREEMPTED_REASON],
          ['user', 'succeeded', null],
        ]);
        // Delivered again (a job redelivery): the pre-empted check-in was kept by the conversation; nothing runs.
        await server.services.checkIns.fire({ id: 'again', queue: 'check-in', key: checkIn.id, dueAt: new Date().toISOString(), attempt: 2, payload: { checkInId: checkIn.id } } as never);
        expect((await runsOf(server, threadId)).filter((run) => run.trigger === 'check_in')).toHaveLength(1);
      } finally {
        await server.destroy();
      }
    });

    it("I5, I7: a check-in fired and charged by a process that died before its run was recorded is run on redelivery, once, and its one model call is charged once", async () => {
      const server = await startTestServer(backend());
      try {
        const context = (server.storage as SqlStorage).context;
        const timers = new SqlTimerRepository(context);
        const now = new Date();
        const day = localDay(now, 'UTC');
        // What a check-in's run costs when nothing goes wrong: the same for the recovered one.
        const usual = await setUp(server);
        await server.services.checkIns.schedule({ userId: ALICE.id, agentId: usual.agentId, threadId: usual.threadId, runId: 'r0' }, { inSeconds: 0.2, reason: 'ask how the move went' });
        await waitFor(async () => (await runsOf(server, usual.threadId)).some((run) => run.trigger === 'check_in' && run.status === 'succeeded'), 20_000, 'the usual check-in to run');
        const cost = await timers.modelCallsUsed(ALICE.id, usual.agentId, day);
        expect(cost).toBeGreaterThan(0);

        const { agentId, threadId } = await setUp(server);
        const checkIn = await server.services.checkIns.schedule({ userId: ALICE.id, agentId, threadId, runId: 'r0' }, { inSeconds: 300, reason: 'ask how the move went' });
        // What the process that died left: the check-in marked fired and its call charged (one
        // transaction), then nothing: it died before its run was recorded, no model was called.
        const firing = await new SqlCheckInRepository(context).fire(checkIn.id, { runId: 'run-of-a-dead-process', firedAt: now.toISOString() }, now.toISOString(), (within) =>
          timers.reserveModelCalls(ALICE.id, agentId, day, 1, policy.modelCallsPerDay, { within }),
        );
        expect(firing.outcome).toBe('fired');
        // Its job, delivered again after the crash.
        await server.services.checkIns.fire({ id: 'again', queue: CHECK_IN_QUEUE, key: checkIn.id, dueAt: checkIn.dueAt, attempt: 2, payload: { checkInId: checkIn.id } });
        expect((await runsOf(server, threadId)).filter((run) => run.trigger === 'check_in').map((run) => run.status)).toEqual(['succeeded']);
        expect(await timers.modelCallsUsed(ALICE.id, agentId, day)).toBe(cost);
      } finally {
        await server.destroy();
      }
    });

    it("I5, I7: a check-in the person cancels while it is being admitted is not fired and uses none of the agent's daily model-call budget", async () => {
      const server = await startTestServer(backend());
      try {
        const { agentId, threadId } = await setUp(server);
        const checkIn = await server.services.checkIns.schedule({ userId: ALICE.id, agentId, threadId, runId: 'r0' }, { inSeconds: 300, reason: 'ask how the review went' });
        const context = (server.storage as SqlStorage).context;
        const timers = new SqlTimerRepository(context);
        const due = new Date(checkIn.dueAt);
        // A firer like the server's, on the same database, whose clock says the check-in is
        // due. The person's cancel (the real route) lands in the middle of its admission:
        // after the check-in was read as pending, before it is marked fired.
        let cancelled: number | undefined;
        const firer = new CheckInService({
          repository: new SqlCheckInRepository(context),
          storage: server.storage,
          timers,
          jobs: server.services.jobs,
          conversations: server.services.conversations,
          coordinator: server.services.coordinator,
          clock: { now: () => due },
          logger: server.logger,
          awaitingApproval: async () => {
            cancelled = (await server.request('DELETE', `/api/threads/${threadId}/check-ins/${checkIn.id}`)).status;
            return false;
          },
        });
        const job: DueJob = { id: 'due', queue: CHECK_IN_QUEUE, key: checkIn.id, dueAt: checkIn.dueAt, attempt: 1, payload: { checkInId: checkIn.id } };
        await firer.fire(job);

        expect(cancelled).toBe(200);
        const [record] = (await server.request('GET', `/api/threads/${threadId}/check-ins?state=all`)).body.checkIns as Json[];
        expect(record).toMatchObject({ id: checkIn.id, state: 'cancelled', runId: null });
        expect((await runsOf(server, threadId)).filter((run) => run.trigger === 'check_in')).toEqual([]);
        expect(await timers.modelCallsUsed(ALICE.id, agentId, localDay(due, 'UTC'))).toBe(0);
      } finally {
        await server.destroy();
      }
    });
  });
}
