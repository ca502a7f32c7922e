import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqlScheduleRepository } from '../../src/adapters/sql/schedule-repository.js';
import type { SqlStorage } from '../../src/adapters/sql/sql-storage.js';
import { PROCESS_ENDED_REASON } from '../../src/app/runs/orphaned-run-sweeper.js';
import { SCHEDULE_QUEUE } from '../../src/app/schedules/schedule-service.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { ALICE, startTestServer, type Backend, type TestServer } from '../helpers/test-server.js';
import { randomSchemaName } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait-for.js';

type Fire = { id: string; status: string; reason: string | null; runId: string | null; threadId: string | null; scheduledFor: string };

/**
 * A schedule fire whose process died (kill -9) mid-fire: its job is delivered again (the
 * queue hands out a dead process's job once its claim lapses), and that delivery settles
 * the fire from what its run became, never runs it a second time (I7). The cluster e2e
 * found fires left `running` forever: the sweep ended the run, the redelivery found the
 * fire claimed and did nothing.
 */
export function scheduleFireRecoverySuite(backend: () => Backend): void {
  describe('schedule fires whose process died', () => {
    let server: TestServer;
    let repository: SqlScheduleRepository;
    beforeAll(async () => {
      // Slow tokens: a live fire stays live while its job is delivered again.
      server = await startTestServer(backend(), { demoTokenDelayMs: 40, place: { dataDir: await makeTempDir(), schema: randomSchemaName() } });
      repository = new SqlScheduleRepository((server.storage as SqlStorage).context);
    });
    afterAll(async () => {
      await server?.destroy();
    });

    async function firesOf(scheduleId: string): Promise<Fire[]> {
      return (await server.request('GET', `/api/schedules/${scheduleId}/fires`)).body.fires as Fire[];
    }

    async function cronRunsOn(threadId: string): Promise<Array<{ id: string; status: string }>> {
      const runs = (await server.request('GET', `/api/threads/${threadId}/runs?limit=50`)).body.runs as Array<{ id: string; status: string; trigger: string }>;
      return runs.filter((run) => run.trigger === 'cron');
    }

    /** A schedule on its own thread whose own fire is an hour away (the tests deliver past fires by hand). */
    async function scheduleOnThread(at = new Date(Date.now() + 3_600_000).toISOString()) {
      const threadId = (await server.request('POST', '/api/threads', { body: {} })).body.id as string;
      const created = await server.request('POST', '/api/schedules', { body: { name: 'Tick', task: 'Tick', target: 'thread', threadId, timing: { kind: 'at', at } } });
      expect(created.status).toBe(201);
      return { threadId, schedule: created.body as { id: string; updatedAt: string } };
    }

    /**
     * What a process killed in the middle of a fire leaves: the fire claimed and `running`,
     * and (unless `run` is false) its cron run recorded `running`, the lock gone with the process.
     */
    async function deadProcessFire(scheduleId: string, threadId: string, run: { recorded: boolean; ended?: 'succeeded' } = { recorded: true }, claimedAgoMs = 60_000) {
      const at = new Date(Date.now() - claimedAgoMs).toISOString();
      const fireId = `fire-dead-${Math.random().toString(36).slice(2)}`;
      const runId = `run-dead-${Math.random().toString(36).slice(2)}`;
      if (run.recorded) {
        await server.storage.runs.create({ id: runId, threadId, userId: ALICE.id, agentId: 'default', trigger: 'cron', meta: { schedule_id: scheduleId, fire_id: fireId, scheduled_for_utc: at }, correlationId: fireId, model: 'demo', requestedAt: at, startedAt: at });
        if (run.ended) await server.storage.runs.finish(runId, { status: run.ended, endedAt: at });
      }
      expect(await repository.claimFire({ id: fireId, scheduleId, userId: ALICE.id, scheduledFor: at, status: 'running', reason: null, runId, threadId, startedAt: at, endedAt: null })).toBe(true);
      return { fireId, runId, scheduledFor: at };
    }

    const jobFor = (schedule: { id: string; updatedAt: string }, scheduledFor: string, attempt = 2) => ({
      id: `job-${Math.random().toString(36).slice(2)}`,
      queue: SCHEDULE_QUEUE,
      key: `${schedule.id}@${scheduledFor}`,
      dueAt: scheduledFor,
      attempt,
      payload: { scheduleId: schedule.id, scheduledFor, version: schedule.updatedAt },
    });

    it('I7: a fire whose run the sweep ended is settled as failed (interrupted) when the job queue delivers its job again, and runs no second time', async () => {
      const { threadId, schedule } = await scheduleOnThread();
      const dead = await deadProcessFire(schedule.id, threadId);
      // The survivors' sweep ends the run first (as in the cluster e2e)…
      await server.services.orphanedRuns.sweepOnce();
      expect((await server.request('GET', `/api/runs/${dead.runId}`)).body).toMatchObject({ status: 'failed', reason: PROCESS_ENDED_REASON });
      // …then the dead process's job is handed out again, through the real queue.
      await server.services.jobs.schedule({ queue: SCHEDULE_QUEUE, key: `${schedule.id}@${dead.scheduledFor}`, dueAt: new Date(), payload: { scheduleId: schedule.id, scheduledFor: dead.scheduledFor, version: schedule.updatedAt } });
      await waitFor(async () => (await firesOf(schedule.id)).some((fire) => fire.status !== 'running'), 20_000, 'the fire to settle');
      expect(await firesOf(schedule.id)).toEqual([expect.objectContaining({ id: dead.fireId, status: 'failed', reason: 'interrupted', runId: dead.runId, threadId })]);
      expect(await cronRunsOn(threadId)).toEqual([expect.objectContaining({ id: dead.runId, status: 'failed' })]);
    });

    it('I7: a fire delivered again before the sweep came ends its orphaned run itself (thread lock free), then settles; a further delivery changes nothing', async () => {
      const { threadId, schedule } = await scheduleOnThread();
      const dead = await deadProcessFire(schedule.id, threadId);
      await server.services.scheduleRunner.fire(jobFor(schedule, dead.scheduledFor));
      expect((await server.request('GET', `/api/runs/${dead.runId}`)).body).toMatchObject({ status: 'failed', reason: PROCESS_ENDED_REASON });
      const settled = await firesOf(schedule.id);
      expect(settled).toEqual([expect.objectContaining({ status: 'failed', reason: 'interrupted', runId: dead.runId })]);
      await server.services.scheduleRunner.fire(jobFor(schedule, dead.scheduledFor, 3));
      expect(await firesOf(schedule.id)).toEqual(settled);
      expect(await cronRunsOn(threadId)).toHaveLength(1);
    });

    it('I7: a fire whose process died before its run was recorded is settled as failed (interrupted), not run; one claimed moments ago is given time', async () => {
      const fresh = await scheduleOnThread();
      const justClaimed = await deadProcessFire(fresh.schedule.id, fresh.threadId, { recorded: false }, 0);
      // Its first delivery may still be on its way to the run: ask again later, change nothing.
      await expect(server.services.scheduleRunner.fire(jobFor(fresh.schedule, justClaimed.scheduledFor))).rejects.toThrow(/retried later/);
      expect(await firesOf(fresh.schedule.id)).toEqual([expect.objectContaining({ status: 'running' })]);

      const { threadId, schedule } = await scheduleOnThread();
      const dead = await deadProcessFire(schedule.id, threadId, { recorded: false });
      await server.services.scheduleRunner.fire(jobFor(schedule, dead.scheduledFor));
      expect(await firesOf(schedule.id)).toEqual([expect.objectContaining({ status: 'failed', reason: 'interrupted', runId: null })]);
      expect(await cronRunsOn(threadId)).toEqual([]);
    });

    it('I7: a fire whose run ended but whose process died before recording the fire takes its run\'s end', async () => {
      const { threadId, schedule } = await scheduleOnThread();
      const dead = await deadProcessFire(schedule.id, threadId, { recorded: true, ended: 'succeeded' });
      await server.services.scheduleRunner.fire(jobFor(schedule, dead.scheduledFor));
      expect(await firesOf(schedule.id)).toEqual([expect.objectContaining({ status: 'succeeded', reason: null, runId: dead.runId })]);
      expect(await cronRunsOn(threadId)).toHaveLength(1);
    });

    it('I7, I8: a live fire delivered again is left alone (its delivery is retried later) and ends once, on its own', async () => {
      const { threadId, schedule } = await scheduleOnThread(new Date(Date.now() + 1_000).toISOString());
      let running: Fire | undefined;
      await waitFor(async () => {
        running = (await firesOf(schedule.id)).find((fire) => fire.status === 'running' && fire.runId !== null && fire.threadId === threadId);
        return running !== undefined && (await cronRunsOn(threadId)).some((run) => run.id === running!.runId && run.status === 'running');
      }, 20_000, 'the fire\'s run to be running');
      // The fire names its run and thread while it runs; its thread lock is held, so nothing is ended.
      await expect(server.services.scheduleRunner.fire(jobFor(schedule, running!.scheduledFor))).rejects.toThrow(/retried later/);
      expect((await server.request('GET', `/api/runs/${running!.runId}`)).body.status).toBe('running');
      await waitFor(async () => (await firesOf(schedule.id))[0]?.status !== 'running', 30_000, 'the fire to end');
      expect(await firesOf(schedule.id)).toEqual([expect.objectContaining({ status: 'succeeded', runId: running!.runId })]);
      expect(await cronRunsOn(threadId)).toEqual([expect.objectContaining({ id: running!.runId, status: 'succeeded' })]);
    });
  });
}
