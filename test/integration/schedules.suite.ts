import { RetryLater } from '../../src/app/job-queue.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ALICE, BOB, startTestServer, type Backend, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';

const MISSED_GRACE_MS = 3_000;

/** Cron and one-shot schedules through the real server, job queue and database. */
export function schedulesSuite(backend: () => Backend): void {
  let server: TestServer;
  beforeAll(async () => {
    // pg-boss hands jobs out on its polling interval (seconds): a grace well above it.
    server = await startTestServer(backend(), { environment: { VIGIL_SCHEDULE_MISSED_GRACE_MS: String(MISSED_GRACE_MS) } });
  });
  afterAll(async () => {
    await server?.destroy();
  });

  const inMs = (milliseconds: number) => new Date(Date.now() + milliseconds).toISOString();

  async function firesOf(id: string, target = server) {
    return (await target.request('GET', `/api/schedules/${id}/fires`)).body.fires as Array<{ status: string; reason: string | null; runId: string | null; threadId: string | null; scheduledFor: string }>;
  }

  it('I11, I12: creates, lists, updates and deletes schedules; refuses bad timing; another user gets 404', async () => {
    const bad = await server.request('POST', '/api/schedules', { body: { name: 'x', task: 't', timing: { kind: 'cron', cron: '0 9 * * *', timezone: 'Mars/Base' } } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('VALIDATION_FAILED');
    const sixFields = await server.request('POST', '/api/schedules', { body: { name: 'x', task: 't', timing: { kind: 'cron', cron: '0 0 9 * * *' } } });
    expect(sixFields.status).toBe(400);
    const created = await server.request('POST', '/api/schedules', { body: { name: 'Morning brief', task: 'Summarise my day', timing: { kind: 'cron', cron: '0 9 * * 1-5', timezone: 'Europe/Berlin' } } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'Morning brief', target: 'new_thread', missedPolicy: 'skip', enabled: true, agentId: 'default' });
    const id = created.body.id as string;
    expect((await server.request('GET', '/api/schedules')).body.schedules.map((schedule: { id: string }) => schedule.id)).toContain(id);
    expect((await server.request('GET', `/api/schedules/${id}`, { token: BOB.token })).body.error.code).toBe('SCHEDULE_NOT_FOUND');
    expect((await server.request('PATCH', `/api/schedules/${id}`, { token: BOB.token, body: { enabled: false } })).status).toBe(404);
    const patched = await server.request('PATCH', `/api/schedules/${id}`, { body: { enabled: false, name: 'Brief' } });
    expect(patched.body).toMatchObject({ enabled: false, name: 'Brief' });
    expect((await server.request('PATCH', `/api/schedules/${id}`, { body: { owner: 'bob' } })).status).toBe(400);
    expect((await server.request('DELETE', `/api/schedules/${id}`, { token: BOB.token })).status).toBe(404);
    expect((await server.request('DELETE', `/api/schedules/${id}`)).status).toBe(204);
    expect((await server.request('GET', `/api/schedules/${id}`)).status).toBe(404);
  });

  it('I11: a schedule refused for its thread leaves nothing behind, not even a default agent; on a thread without agentId it takes the thread\'s agent', async () => {
    const alicesThread = (await server.request('POST', '/api/threads', { body: {} })).body.id as string;
    // Bob starts with no agent: his default one is made on first use.
    expect((await server.request('DELETE', '/api/agents/default', { token: BOB.token })).status).toBeOneOf([204, 404]);
    const bobsAgents = async () => ((await server.request('GET', '/api/agents', { token: BOB.token })).body.agents as Array<{ id: string }>).map((agent) => agent.id);
    const before = await bobsAgents();
    const body = { name: 'x', task: 't', timing: { kind: 'cron', cron: '0 9 * * *' }, target: 'thread' };
    const othersThread = await server.request('POST', '/api/schedules', { token: BOB.token, body: { ...body, threadId: alicesThread } });
    expect([othersThread.status, othersThread.body.error.code]).toEqual([404, 'THREAD_NOT_FOUND']);
    const noThread = await server.request('POST', '/api/schedules', { token: BOB.token, body });
    expect([noThread.status, noThread.body.error.code]).toEqual([400, 'VALIDATION_FAILED']);
    expect(await bobsAgents()).toEqual(before);
    expect(before).not.toContain('default');

    expect((await server.request('POST', '/api/agents', { body: { id: 'briefer', name: 'Briefer' } })).status).toBe(201);
    const brieferThread = (await server.request('POST', '/api/threads', { body: { agentId: 'briefer' } })).body.id as string;
    const onThread = await server.request('POST', '/api/schedules', { body: { ...body, threadId: brieferThread } });
    expect(onThread.status).toBe(201);
    expect(onThread.body).toMatchObject({ agentId: 'briefer', threadId: brieferThread, target: 'thread' });
    const mismatch = await server.request('POST', '/api/schedules', { body: { ...body, threadId: brieferThread, agentId: 'default' } });
    expect([mismatch.status, mismatch.body.error.code]).toEqual([400, 'VALIDATION_FAILED']);
    expect((await server.request('DELETE', `/api/schedules/${onThread.body.id}`)).status).toBe(204);
  });

  it('I11: a schedule that would never fire (a one-shot in the past, a cron that matches no date) is refused, created or switched on, and nothing is stored', async () => {
    const before = (await server.request('GET', '/api/schedules')).body.schedules.length as number;
    const past = await server.request('POST', '/api/schedules', { body: { name: 'x', task: 't', timing: { kind: 'at', at: '2001-01-01T00:00:00Z' } } });
    expect(past.status).toBe(400);
    expect(past.body.error).toMatchObject({ code: 'VALIDATION_FAILED' });
    expect(past.body.error.message).toContain('not in the future');
    const never = await server.request('POST', '/api/schedules', { body: { name: 'x', task: 't', timing: { kind: 'cron', cron: '0 0 31 2 *' } } });
    expect(never.status).toBe(400);
    expect(never.body.error.message).toContain('matches no date');
    expect((await server.request('GET', '/api/schedules')).body.schedules).toHaveLength(before);
    // Disabled, it may be kept as a draft; switched on, or given such a timing while on, it is refused and left as it was.
    const draft = await server.request('POST', '/api/schedules', { body: { name: 'draft', task: 't', enabled: false, timing: { kind: 'at', at: '2001-01-01T00:00:00Z' } } });
    expect(draft.status).toBe(201);
    const switchedOn = await server.request('PATCH', `/api/schedules/${draft.body.id}`, { body: { enabled: true } });
    expect(switchedOn.status).toBe(400);
    expect((await server.request('GET', `/api/schedules/${draft.body.id}`)).body.enabled).toBe(false);
    const live = await server.request('POST', '/api/schedules', { body: { name: 'live', task: 't', timing: { kind: 'at', at: inMs(3_600_000) } } });
    expect((await server.request('PATCH', `/api/schedules/${live.body.id}`, { body: { timing: { kind: 'cron', cron: '0 0 30 2 *' } } })).status).toBe(400);
    expect((await server.request('GET', `/api/schedules/${live.body.id}`)).body.timing.kind).toBe('at');
    // Another user's schedule is not found before anything is checked (I12).
    expect((await server.request('PATCH', `/api/schedules/${live.body.id}`, { token: BOB.token, body: { enabled: true } })).status).toBe(404);
    for (const id of [draft.body.id, live.body.id]) expect((await server.request('DELETE', `/api/schedules/${id}`)).status).toBe(204);
  });

  it('a one-shot fire runs once on a new thread with trigger cron and its meta; the task prompt stays internal', async () => {
    const created = await server.request('POST', '/api/schedules', { body: { name: 'Reminder', task: 'Remind me to stretch', timing: { kind: 'at', at: inMs(1_000) } } });
    const id = created.body.id as string;
    let fires: Awaited<ReturnType<typeof firesOf>> = [];
    for (let attempt = 0; attempt < 150 && !fires.some((fire) => fire.status === 'succeeded'); attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      fires = await firesOf(id);
    }
    expect(fires).toHaveLength(1);
    expect(fires[0]).toMatchObject({ status: 'succeeded', reason: null });
    const run = (await server.request('GET', `/api/runs/${fires[0]!.runId}`)).body;
    expect(run).toMatchObject({ trigger: 'cron', status: 'succeeded', threadId: fires[0]!.threadId });
    expect(run.meta).toMatchObject({ schedule_id: id, scheduled_for_utc: fires[0]!.scheduledFor });
    expect(run.meta.fire_id).toEqual(expect.any(String));
    const history = await server.request('GET', `/api/threads/${fires[0]!.threadId}/history`);
    // The task prompt is the system's message in the person's role: internal (I2).
    expect(history.body.messages.map((message: { role: string }) => message.role)).toEqual(['assistant']);
    // I1: the demo model's reply does not quote the schedule's task back as the person's words.
    expect(history.body.messages[0].content).toContain('Your schedule asked: "Remind me to stretch"');
    expect(history.body.messages[0].content).not.toContain('You said');
    const internal = await server.request('GET', `/api/threads/${fires[0]!.threadId}/history?include=internal`);
    expect(internal.body.messages[0]).toMatchObject({ role: 'user', visibility: 'internal', content: 'Remind me to stretch' });
    // Nothing more fires for a one-shot.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await firesOf(id)).toHaveLength(1);
  });

  it('I7: a schedule edited before its fire (its timing kept) still fires, once; a disabled one does not', async () => {
    const at = new Date(Date.now() + 1_500).toISOString();
    const created = await server.request('POST', '/api/schedules', { body: { name: 'Reminder', task: 'Remind me to stretch', timing: { kind: 'at', at } } });
    expect(created.status).toBe(201);
    // An edit that keeps the timing: a rename.
    expect((await server.request('PATCH', `/api/schedules/${created.body.id}`, { body: { name: 'Stretch reminder' } })).status).toBe(200);
    const paused = await server.request('POST', '/api/schedules', { body: { name: 'Paused', task: 'Never mind', timing: { kind: 'at', at } } });
    expect((await server.request('PATCH', `/api/schedules/${paused.body.id}`, { body: { enabled: false } })).status).toBe(200);
    await waitFor(async () => (await firesOf(created.body.id)).some((fire) => fire.status === 'succeeded'), 10_000, 'the edited schedule to fire');
    expect(await firesOf(created.body.id)).toHaveLength(1);
    expect(await firesOf(paused.body.id)).toEqual([]);
    expect((await server.request('GET', `/api/schedules/${created.body.id}/fires`, { token: BOB.token })).status).toBe(404);
  });

  it('no overlap past 30 minutes either: a fire whose run is alive is not taken as interrupted, and the next one is skipped', async () => {
    // The server's clock, moved on 31 minutes while the first fire's run still goes.
    let offsetMs = 0;
    const slow = await startTestServer(backend(), { demoTokenDelayMs: 60, clock: { now: () => new Date(Date.now() + offsetMs) } });
    try {
      const created = await slow.request('POST', '/api/schedules', { body: { name: 'Long', task: 'A long job', target: 'new_thread', timing: { kind: 'cron', cron: '0 3 * * *', timezone: 'UTC' } } });
      const schedule = created.body;
      const job = (scheduledFor: string) => ({ id: 'z', queue: 'schedule', key: `${schedule.id}@${scheduledFor}`, dueAt: scheduledFor, attempt: 1, payload: { scheduleId: schedule.id, scheduledFor, version: schedule.updatedAt } });
      const runner = slow.services.scheduleRunner;
      const a = new Date(Date.now() - 100).toISOString();
      const first = runner.fire(job(a));
      await waitFor(async () => {
        const fire = (await firesOf(schedule.id, slow)).find((entry) => entry.scheduledFor === a);
        return fire?.runId != null && (await slow.request('GET', `/api/runs/${fire.runId}`)).body.status === 'running';
      }, 10_000, 'the first fire to be running');
      offsetMs = 31 * 60_000;
      const b = new Date(Date.now() + offsetMs - 100).toISOString();
      await runner.fire(job(b));
      await first;
      const fires = await firesOf(schedule.id, slow);
      expect(fires.find((fire) => fire.scheduledFor === b)).toMatchObject({ status: 'skipped', reason: 'overlap' });
      expect(fires.find((fire) => fire.scheduledFor === a)).toMatchObject({ status: 'succeeded' });
    } finally {
      await slow.destroy();
    }
  });

  it('I12: a fire on a new thread names its thread while its run is still going, not only once it ends; another user sees neither', async () => {
    const slow = await startTestServer(backend(), { demoTokenDelayMs: 60 });
    try {
      const schedule = (await slow.request('POST', '/api/schedules', { body: { name: 'Watched', task: 'A long job', target: 'new_thread', timing: { kind: 'cron', cron: '0 3 * * *', timezone: 'UTC' } } })).body;
      const scheduledFor = new Date(Date.now() - 100).toISOString();
      const firing = slow.services.scheduleRunner.fire({ id: 'w', queue: 'schedule', key: `${schedule.id}@${scheduledFor}`, dueAt: scheduledFor, attempt: 1, payload: { scheduleId: schedule.id, scheduledFor, version: schedule.updatedAt } });
      let run: { status: string; threadId: string } | undefined;
      await waitFor(async () => {
        const fire = (await firesOf(schedule.id, slow))[0];
        run = fire?.runId ? (await slow.request('GET', `/api/runs/${fire.runId}`)).body : undefined;
        return run?.status === 'running';
      }, 10_000, 'the fire\'s run to be running');
      const [inProgress] = await firesOf(schedule.id, slow);
      expect(inProgress).toMatchObject({ status: 'running', threadId: run!.threadId });
      expect((await slow.request('GET', `/api/threads/${inProgress!.threadId}`)).status).toBe(200);
      // Another user sees neither the fire nor its thread (I12).
      expect((await slow.request('GET', `/api/schedules/${schedule.id}/fires`, { token: BOB.token })).body.error.code).toBe('SCHEDULE_NOT_FOUND');
      expect((await slow.request('GET', `/api/threads/${inProgress!.threadId}`, { token: BOB.token })).status).toBe(404);
      await firing;
      expect((await firesOf(schedule.id, slow))[0]).toMatchObject({ status: 'succeeded', threadId: run!.threadId });
    } finally {
      await slow.destroy();
    }
  });

  it('I7: a fire delivered twice runs once; a fire while the previous still runs is skipped (no overlap)', async () => {
    const thread = (await server.request('POST', '/api/threads', { body: {} })).body;
    const created = await server.request('POST', '/api/schedules', { body: { name: 'Daily', task: 'Daily check', target: 'thread', threadId: thread.id, timing: { kind: 'cron', cron: '0 3 * * *', timezone: 'UTC' } } });
    const schedule = created.body;
    const runner = server.services.scheduleRunner;
    const job = (scheduledFor: string) => ({ id: 'x', queue: 'schedule', key: `${schedule.id}@${scheduledFor}`, dueAt: scheduledFor, attempt: 1, payload: { scheduleId: schedule.id, scheduledFor, version: schedule.updatedAt } });
    const now = new Date();
    const first = new Date(now.getTime() - 100).toISOString();
    // The second delivery returns, or (the fire claimed, its run on its way) asks the queue to
    // deliver it again later: either way it runs nothing.
    const deliveries = await Promise.allSettled([runner.fire(job(first)), runner.fire(job(first))]);
    for (const delivery of deliveries) if (delivery.status === 'rejected') expect(delivery.reason).toBeInstanceOf(RetryLater);
    let fires = await firesOf(schedule.id);
    expect(fires.filter((fire) => fire.scheduledFor === first)).toHaveLength(1);
    const runs = (await server.request('GET', `/api/threads/${thread.id}/runs`)).body.runs;
    expect(runs.filter((run: { trigger: string }) => run.trigger === 'cron')).toHaveLength(1);

    // Overlap: hold the first fire "running" while the second is delivered.
    const slow = await startTestServer(backend(), { demoTokenDelayMs: 60 });
    try {
      const slowThread = (await slow.request('POST', '/api/threads', { body: {} })).body;
      const slowSchedule = (await slow.request('POST', '/api/schedules', { body: { name: 'Slow', task: 'A long job', target: 'thread', threadId: slowThread.id, timing: { kind: 'cron', cron: '0 3 * * *' } } })).body;
      const slowJob = (scheduledFor: string) => ({ id: 'y', queue: 'schedule', key: `${slowSchedule.id}@${scheduledFor}`, dueAt: scheduledFor, attempt: 1, payload: { scheduleId: slowSchedule.id, scheduledFor, version: slowSchedule.updatedAt } });
      const a = new Date(Date.now() - 200).toISOString();
      const b = new Date(Date.now() - 100).toISOString();
      const running = slow.services.scheduleRunner.fire(slowJob(a));
      await new Promise((resolve) => setTimeout(resolve, 150));
      await slow.services.scheduleRunner.fire(slowJob(b));
      await running;
      fires = (await slow.request('GET', `/api/schedules/${slowSchedule.id}/fires`)).body.fires;
      expect(fires.find((fire) => fire.scheduledFor === b)).toMatchObject({ status: 'skipped', reason: 'overlap' });
      expect(fires.find((fire) => fire.scheduledFor === a)).toMatchObject({ status: 'succeeded' });
    } finally {
      await slow.destroy();
    }
  });

  it('the missed-run policy after a restart: skip records the miss and runs nothing; run_once runs once', async () => {
    const skip = (await server.request('POST', '/api/schedules', { body: { name: 'Skip me', task: 'missed task', missedPolicy: 'skip', timing: { kind: 'at', at: inMs(600) } } })).body;
    const once = (await server.request('POST', '/api/schedules', { body: { name: 'Run me', task: 'late task', missedPolicy: 'run_once', timing: { kind: 'at', at: inMs(600) } } })).body;
    // Down across the due time and well past the grace.
    await server.close();
    await new Promise((resolve) => setTimeout(resolve, 600 + MISSED_GRACE_MS + 500));
    server = await server.restart();
    let skipFires: Awaited<ReturnType<typeof firesOf>> = [];
    let onceFires: Awaited<ReturnType<typeof firesOf>> = [];
    for (let attempt = 0; attempt < 150; attempt++) {
      skipFires = await firesOf(skip.id);
      onceFires = await firesOf(once.id);
      if (skipFires.some((fire) => fire.status !== 'running') && onceFires.some((fire) => fire.status === 'succeeded')) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(skipFires).toHaveLength(1);
    expect(skipFires[0]).toMatchObject({ status: 'skipped', reason: 'missed', runId: null });
    expect(onceFires).toHaveLength(1);
    expect(onceFires[0]).toMatchObject({ status: 'succeeded' });
  });
}
