/**
 * Idle follow-ups end to end on a real server and a real database (SQLite and
 * PostgreSQL, by the *.test.ts files beside this one), with a counting fake model: every
 * cap is proven by a model-call count that did not move. Tests share one server and
 * tell their model calls apart by a tag in their agent's system prompt.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { subscribeToThread } from '../helpers/thread-socket.js';
import type { SqlStorage } from '../../src/adapters/sql/sql-storage.js';
import { SqlTimerRepository } from '../../src/adapters/sql/timer-repository.js';
import { FOLLOW_UP_QUEUE } from '../../src/app/autonomy/autonomy-dependencies.js';
import { PREEMPTED_REASON, STOPPING_REASON } from '../../src/app/run-coordinator.js';
import { followUpMessageId } from '../../src/domain/autonomy/timer.js';
import { localDay, localMinuteOfDay } from '../../src/domain/autonomy/zoned-time.js';
import { TRIGGER_PROMPTS } from '../../src/domain/message-metadata.js';
import { FakeModelLog, tagged } from '../helpers/autonomy-fake-model.js';
import { waitFor } from '../helpers/wait-for.js';
import { ALICE, BOB, startTestServer, type Backend, type TestServer } from '../helpers/test-server.js';

type Json = Record<string, any>;

/** A policy whose follow-ups come in a fraction of a second. */
export function fast(overrides: Json = {}): Json {
  const delay = overrides.delay ?? 150;
  const { delay: _delay, ...rest } = overrides;
  return {
    enabled: true,
    delaysMs: { check_in: delay, question_unanswered: delay, task_incomplete: delay, waiting_for_decision: delay },
    minDelayMs: 10,
    maxDelayMs: 600_000,
    backoffMultiplier: 1,
    maxPerSilence: 1,
    maxPerDay: 100,
    modelCallsPerDay: 1000,
    busyRetryMs: 100,
    ...rest,
  };
}

export function autonomySuite(backend: () => Backend, options: { slackMs: number }): void {
  const log = new FakeModelLog();
  let server: TestServer;
  const slack = options.slackMs;

  beforeAll(async () => {
    server = await startTestServer(backend(), { models: log.resolver(), autonomy: { modelRetries: 2, retryBackoffMs: 20 } });
  });
  afterAll(async () => {
    await server?.destroy();
  });

  const sleep = (milliseconds: number) => new Promise((resolve) => setTimeout(resolve, milliseconds));

  async function eventually<T>(probe: () => Promise<T | undefined | false>, timeoutMs = 15_000 + slack * 10): Promise<T> {
    const start = Date.now();
    for (;;) {
      const value = await probe();
      if (value) return value;
      if (Date.now() - start > timeoutMs) throw new Error('timed out waiting for a condition');
      await sleep(25);
    }
  }

  async function agentWith(tag: string, policy: Json, on: TestServer = server, token = ALICE.token): Promise<string> {
    const id = `a-${tag}-${randomUUID().slice(0, 6)}`;
    const response = await on.request('POST', '/api/agents', { token, body: { id, name: tag, systemPrompt: tagged(tag), autonomy: policy } });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    return id;
  }

  async function threadOf(agentId: string, on: TestServer = server, token = ALICE.token): Promise<string> {
    const response = await on.request('POST', '/api/threads', { token, body: { agentId } });
    expect(response.status).toBe(201);
    return response.body.id as string;
  }

  async function say(threadId: string, content: string, on: TestServer = server): Promise<Json> {
    const response = await on.request('POST', `/api/threads/${threadId}/messages`, { body: { content } });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return response.body;
  }

  async function timers(threadId: string, on: TestServer = server): Promise<Json[]> {
    const response = await on.request('GET', `/api/threads/${threadId}/timers?state=all&limit=100`);
    expect(response.status).toBe(200);
    return (response.body.timers as Json[]).reverse(); // oldest first
  }

  async function runs(threadId: string, on: TestServer = server): Promise<Json[]> {
    return ((await on.request('GET', `/api/threads/${threadId}/runs?limit=100`)).body.runs as Json[]).reverse();
  }

  async function history(threadId: string, internal = false, on: TestServer = server): Promise<Json[]> {
    return (await on.request('GET', `/api/threads/${threadId}/history?limit=200${internal ? '&include=internal' : ''}`)).body.messages as Json[];
  }

  /** A WebSocket subscribed to a thread (acknowledged), collecting every event. */
  const subscribe = (threadId: string, on: TestServer = server) => subscribeToThread(on, threadId);

  const settled = (list: Json[]) => list.filter((timer) => timer.state !== 'pending');

  describe('a follow-up', () => {
    it('I2: fires after a reply; the reply streams to subscribers and shows in history, the synthetic prompt never does', async () => {
      const tag = 'basic';
      const agentId = await agentWith(tag, fast());
      const threadId = await threadOf(agentId);
      const { events, socket } = await subscribe(threadId);
      await say(threadId, 'Hello there');
      const fired = await eventually(async () => (await timers(threadId)).find((timer) => timer.state === 'fired'));
      await eventually(async () => (await runs(threadId)).filter((run) => run.trigger === 'autonomy' && run.status === 'succeeded').length === 1);
      await eventually(async () => (await timers(threadId)).some((timer) => timer.stateReason === 'cap_per_silence'));
      socket.close();

      expect(fired).toMatchObject({ triggerType: 'question_unanswered', attempt: 1, reason: 'the reply asked the person a question' });
      const visible = await history(threadId);
      expect(visible.map((message) => message.role)).toEqual(['user', 'assistant', 'assistant']);
      expect(visible[2]!.content).toContain('Following up');
      expect(JSON.stringify(visible)).not.toContain(TRIGGER_PROMPTS.question_unanswered);

      const internal = (await history(threadId, true)).filter((message) => message.visibility === 'internal');
      expect(internal).toHaveLength(1);
      expect(internal[0]).toMatchObject({ id: followUpMessageId(fired.id), content: TRIGGER_PROMPTS.question_unanswered, role: 'user' });
      expect(internal[0]!.additionalKwargs).toEqual({ synthetic: true, trigger_type: 'question_unanswered', trigger_reason: 'the reply asked the person a question', timer_id: fired.id });

      const autonomyRun = (await runs(threadId)).find((run) => run.trigger === 'autonomy')!;
      expect(autonomyRun.id).toBe(fired.runId);
      expect(autonomyRun.meta).toMatchObject({ trigger: 'autonomy', trigger_type: 'question_unanswered', timer_id: fired.id });

      const types = events.map((event) => event.type);
      for (const type of ['timer.schedule', 'timer.fire', 'run.start', 'message.delta', 'message.end', 'run.end']) expect(types).toContain(type);
      const fireEvent = events.find((event) => event.type === 'timer.fire')!;
      expect(fireEvent).toMatchObject({ timerId: fired.id, runId: fired.runId, triggerType: 'question_unanswered' });
      const autonomyMessages = events.filter((event) => event.type === 'message.end' && event.runId === fired.runId).map((event) => event.message.role);
      expect(autonomyMessages).toEqual(['assistant']); // the synthetic prompt is never sent as a person's message
      expect(JSON.stringify(events)).not.toContain(TRIGGER_PROMPTS.question_unanswered);
      expect(log.syntheticReplies(tag)).toBe(1);
    });

    it('chooses the trigger by rules: options → waiting_for_decision, next steps → task_incomplete, else check_in', async () => {
      const cases: Array<[string, string]> = [
        ['Would you prefer option A or option B?', 'waiting_for_decision'],
        ['I set up the project. Next steps: write the tests.', 'task_incomplete'],
        ['Done. Have a nice day.', 'check_in'],
      ];
      for (const [reply, expected] of cases) {
        const tag = `rules-${expected}`;
        log.behaviour = (call) => (call.tag === tag && !call.synthetic ? { reply } : {});
        const agentId = await agentWith(tag, fast({ delay: 60_000 }));
        const threadId = await threadOf(agentId);
        await say(threadId, 'go');
        const [timer] = await timers(threadId);
        expect(timer).toMatchObject({ state: 'pending', triggerType: expected });
      }
      log.behaviour = () => ({});
    });
  });

  describe('caps before any model call (I5)', () => {
    it('I5: the per-silence cap: no model call beyond it; a real message starts a new silence', async () => {
      const tag = 'silence';
      const agentId = await agentWith(tag, fast({ maxPerSilence: 2, backoffMultiplier: 1.5 }));
      const threadId = await threadOf(agentId);
      await say(threadId, 'Hi');
      await eventually(async () => (await timers(threadId)).some((timer) => timer.stateReason === 'cap_per_silence'));
      await sleep(300 + slack);
      const first = await timers(threadId);
      expect(first.map((timer) => [timer.state, timer.attempt])).toEqual([
        ['fired', 1],
        ['fired', 2],
        ['skipped', 3],
      ]);
      expect(log.syntheticReplies(tag)).toBe(2);
      expect(log.replies(tag)).toBe(3);
      // Backoff: the second follow-up waited 1.5 times as long as the first.
      expect(Date.parse(first[1]!.dueAt) - Date.parse(first[1]!.createdAt)).toBeGreaterThanOrEqual(220);

      await say(threadId, 'I am back');
      await eventually(async () => (await timers(threadId)).filter((timer) => timer.stateReason === 'cap_per_silence').length === 2);
      await sleep(200 + slack);
      expect(log.syntheticReplies(tag)).toBe(4);
      expect((await timers(threadId)).filter((timer) => timer.state === 'fired').map((timer) => timer.attempt)).toEqual([1, 2, 1, 2]);
    });

    it('I5: the per-day cap (in the policy time zone): no model call beyond it', async () => {
      const tag = 'per-day';
      const agentId = await agentWith(tag, fast({ maxPerSilence: 10, maxPerDay: 2, timeZone: 'Pacific/Auckland' }));
      const threadId = await threadOf(agentId);
      await say(threadId, 'Hi');
      await eventually(async () => (await timers(threadId)).some((timer) => timer.stateReason === 'cap_per_day'));
      await sleep(300 + slack);
      expect(settled(await timers(threadId)).map((timer) => timer.stateReason ?? timer.state)).toEqual(['fired', 'fired', 'cap_per_day']);
      expect(log.syntheticReplies(tag)).toBe(2);
    });

    it('I5: the daily model-call budget: no model call beyond it', async () => {
      const tag = 'budget';
      const agentId = await agentWith(tag, fast({ maxPerSilence: 10, modelCallsPerDay: 2 }));
      const threadId = await threadOf(agentId);
      await say(threadId, 'Hi');
      await eventually(async () => (await timers(threadId)).some((timer) => timer.stateReason === 'budget'));
      await sleep(300 + slack);
      expect(settled(await timers(threadId)).map((timer) => timer.stateReason ?? timer.state)).toEqual(['fired', 'fired', 'budget']);
      expect(log.syntheticReplies(tag)).toBe(2);
      expect(server.logs.some((line) => line.msg === 'autonomy model-call budget spent; no model call' && line.agentId === agentId)).toBe(true);
    });

    it('I5: quiet hours when a follow-up is planned: deferred to their end, or dropped — no model call', async () => {
      const quiet = quietHoursAroundNow('Europe/Berlin');
      const deferTag = 'quiet-defer';
      const deferThread = await threadOf(await agentWith(deferTag, fast({ timeZone: 'Europe/Berlin', quietHours: { ...quiet, mode: 'defer' } })));
      await say(deferThread, 'Hi');
      const [deferred] = await timers(deferThread);
      expect(deferred!.state).toBe('pending');
      expect(localMinuteOfDay(new Date(deferred!.dueAt), 'Europe/Berlin')).toBe(minutes(quiet.end));
      expect(Date.parse(deferred!.dueAt) - Date.now()).toBeGreaterThan(60 * 60_000);

      const dropTag = 'quiet-drop';
      const dropThread = await threadOf(await agentWith(dropTag, fast({ timeZone: 'Europe/Berlin', quietHours: { ...quiet, mode: 'drop' } })));
      await say(dropThread, 'Hi');
      expect((await timers(dropThread)).map((timer) => [timer.state, timer.stateReason])).toEqual([['dropped', 'quiet_hours']]);
      await sleep(300 + slack);
      expect(log.syntheticReplies(deferTag) + log.syntheticReplies(dropTag)).toBe(0);
    });

    it('I5: quiet hours set after a follow-up was planned drop it before any model call', async () => {
      const tag = 'quiet-at-fire';
      const agentId = await agentWith(tag, fast({ delay: 1_500, timeZone: 'Europe/Berlin' }));
      const threadId = await threadOf(agentId);
      await say(threadId, 'Hi');
      const [timer] = await timers(threadId);
      expect(timer!.state).toBe('pending');
      // Quiet hours begin after it was planned: the policy change re-plans it (and the firer
      // checks them again as it comes due, for a change that lands while it fires).
      const put = await server.request('PUT', `/api/agents/${agentId}/autonomy`, { body: fast({ delay: 1_500, timeZone: 'Europe/Berlin', quietHours: { ...quietHoursAroundNow('Europe/Berlin'), mode: 'drop' } }) });
      expect(put.status).toBe(200);
      await eventually(async () => (await timers(threadId))[0]!.state !== 'pending');
      expect((await timers(threadId))[0]).toMatchObject({ state: 'dropped', stateReason: 'quiet_hours' });
      expect(log.syntheticReplies(tag)).toBe(0);
    });
  });

  describe('cancellation (I6)', () => {
    it('I6: a person\'s message cancels the pending follow-up on receipt, before its run starts', async () => {
      const tag = 'cancel-on-receipt';
      log.behaviour = (call) => (call.tag === tag ? { tokenDelayMs: 20 } : {});
      const agentId = await agentWith(tag, fast({ delay: 60_000 }));
      const threadId = await threadOf(agentId);
      await say(threadId, 'First');
      const [pending] = await timers(threadId);
      expect(pending!.state).toBe('pending');
      const { events, socket } = await subscribe(threadId);
      socket.send(JSON.stringify({ type: 'message.send', threadId, content: 'Second', requestId: 'second' }));
      // Its own run's end, by id: on PostgreSQL the first turn's last events may still reach a
      // new subscriber (their notice can come after it subscribed).
      const runId = await eventually(async () => events.find((event) => event.type === 'message.accepted' && event.requestId === 'second')?.runId as string | undefined);
      await eventually(async () => events.some((event) => event.type === 'run.end' && event.runId === runId));
      socket.close();
      log.behaviour = () => ({});
      const cancelAt = events.findIndex((event) => event.type === 'timer.cancel' && event.timerId === pending!.id);
      const startAt = events.findIndex((event) => event.type === 'run.start' && event.runId === runId);
      expect(cancelAt).toBeGreaterThanOrEqual(0);
      expect(cancelAt).toBeLessThan(startAt);
      expect(events[cancelAt]).toMatchObject({ reason: 'a person sent a message' });
      const all = await timers(threadId);
      expect(all[0]).toMatchObject({ id: pending!.id, state: 'cancelled', stateReason: 'a person sent a message' });
      // Cancelled before the model saw the person's second message.
      const secondCall = log.of(tag).find((call) => call.lastHuman === 'Second')!;
      expect(Date.parse(events[cancelAt]!.at)).toBeLessThanOrEqual(secondCall.at);
      // The second reply plans its own follow-up (right after its run.end).
      await eventually(async () => (await timers(threadId)).some((timer) => timer.state === 'pending' && timer.id !== pending!.id));
    });

    it('I6: a timer older than the thread\'s last real user message never fires (checked at fire time too)', async () => {
      const tag = 'stale';
      // No follow-up of its own in the way (a cap of 0), so the only timer is the stale one.
      const agentId = await agentWith(tag, fast({ maxPerSilence: 0 }));
      const threadId = await threadOf(agentId);
      await say(threadId, 'Hello');
      // A timer the receipt-time cancel missed: planned against an earlier message, due now.
      const repository = new SqlTimerRepository((server.storage as SqlStorage).context);
      const id = randomUUID();
      await repository.insert(
        { id, threadId, userId: ALICE.id, agentId, dueAt: new Date().toISOString(), triggerType: 'check_in', reason: 'stale', attempt: 1, state: 'pending', stateReason: null, scheduledAgainst: '2000-01-01T00:00:00.000Z', sourceRunId: null },
        new Date().toISOString(),
        async (within) => void (await server.services.jobs.schedule({ queue: FOLLOW_UP_QUEUE, key: id, dueAt: new Date(), payload: { timerId: id } }, { within })),
      );
      await eventually(async () => (await timers(threadId)).find((timer) => timer.id === id)?.state === 'dropped');
      expect((await timers(threadId)).find((timer) => timer.id === id)).toMatchObject({ stateReason: 'superseded_by_user_message' });
      expect(log.syntheticReplies(tag)).toBe(0);
    });
  });

  describe('exactly once (I7)', () => {
    it('I7: a job delivered again for a fired timer is a no-op', async () => {
      const tag = 'redelivered';
      const agentId = await agentWith(tag, fast());
      const threadId = await threadOf(agentId);
      await say(threadId, 'Hello');
      const fired = await eventually(async () => (await timers(threadId)).find((timer) => timer.state === 'fired'));
      await eventually(async () => (await runs(threadId)).some((run) => run.trigger === 'autonomy' && run.status === 'succeeded'));
      await server.services.jobs.schedule({ queue: FOLLOW_UP_QUEUE, key: fired.id, dueAt: new Date(), payload: { timerId: fired.id } });
      await sleep(600 + slack * 2);
      expect(log.syntheticReplies(tag)).toBe(1);
      expect((await runs(threadId)).filter((run) => run.trigger === 'autonomy')).toHaveLength(1);
      expect((await history(threadId)).map((message) => message.role)).toEqual(['user', 'assistant', 'assistant']);
    });
  });

  describe('recovery of a fire cut short (I7)', () => {
    it('I7, I6: a fire whose process died before its run was recorded, superseded by a person since, is dropped, not left naming a run that never was', async () => {
      const agentId = await agentWith('phantom', fast());
      const threadId = await threadOf(agentId);
      const repository = new SqlTimerRepository((server.storage as SqlStorage).context);
      const id = randomUUID();
      const longAgo = new Date(Date.now() - 60_000).toISOString();
      await repository.insert({ id, threadId, userId: ALICE.id, agentId, dueAt: longAgo, triggerType: 'check_in', reason: 'cut short', attempt: 1, state: 'pending', stateReason: null, scheduledAgainst: longAgo, sourceRunId: null }, longAgo);
      // Claimed and marked fired, then the process died before the run was recorded.
      const phantomRunId = randomUUID();
      expect(await repository.transition(id, 'pending', 'fired', { runId: phantomRunId, firedAt: longAgo, stateReason: null }, longAgo)).toBeDefined();
      await say(threadId, 'I am back');
      await server.services.jobs.schedule({ queue: FOLLOW_UP_QUEUE, key: id, dueAt: new Date(), payload: { timerId: id } });
      const settled = await eventually(async () => (await timers(threadId)).find((timer) => timer.id === id && timer.state !== 'fired'));
      expect(settled).toMatchObject({ state: 'dropped', stateReason: 'superseded_by_user_message', runId: null });
      expect((await runs(threadId)).some((run) => run.id === phantomRunId)).toBe(false);
    });
  });

  describe('the safety sweep (I7)', () => {
    it('I7: a timer overdue without a job (lost by hand or by exhausted retries) is handed out again and fires once', async () => {
      const tag = 'sweep';
      const agentId = await agentWith(tag, fast());
      const threadId = await threadOf(agentId);
      const repository = new SqlTimerRepository((server.storage as SqlStorage).context);
      const id = randomUUID();
      const longAgo = new Date(Date.now() - 11 * 60_000).toISOString();
      await repository.insert({ id, threadId, userId: ALICE.id, agentId, dueAt: longAgo, triggerType: 'check_in', reason: 'a lost job', attempt: 1, state: 'pending', stateReason: null, scheduledAgainst: null, sourceRunId: null }, longAgo);
      expect(await server.services.autonomy.sweep()).toBeGreaterThanOrEqual(1);
      await eventually(async () => (await runs(threadId)).some((run) => run.trigger === 'autonomy' && run.status === 'succeeded'));
      expect((await timers(threadId)).find((timer) => timer.id === id)).toMatchObject({ state: 'fired' });
      expect(await server.services.autonomy.sweep()).toBe(0);
      await sleep(300 + slack);
      expect(log.syntheticReplies(tag)).toBe(1);
    });
  });

  describe('one run per thread (I8)', () => {
    it('I8: a person\'s message during an autonomous run aborts it (run.end first), then is answered', async () => {
      const tag = 'preempt';
      log.behaviour = (call) => (call.tag === tag && call.synthetic ? { tokenDelayMs: 40, reply: 'a b c d e f g h i j k l m n o p q r s t u v w x y z' } : {});
      const agentId = await agentWith(tag, fast());
      const threadId = await threadOf(agentId);
      const { events, socket } = await subscribe(threadId);
      await say(threadId, 'Hello');
      const autonomyRunId = await eventually(async () => events.find((event) => event.type === 'message.delta' && events.some((start) => start.type === 'run.start' && start.runId === event.runId && start.trigger === 'autonomy'))?.runId as string | undefined);
      const answer = await say(threadId, 'Wait, one more thing');
      socket.close();
      log.behaviour = () => ({});
      expect(answer.run).toMatchObject({ status: 'succeeded', trigger: 'user' });
      const autonomyRun = (await runs(threadId)).find((run) => run.id === autonomyRunId)!;
      expect(autonomyRun).toMatchObject({ status: 'cancelled', reason: PREEMPTED_REASON });
      const autonomyEnd = events.findIndex((event) => event.type === 'run.end' && event.runId === autonomyRunId);
      const userStart = events.findIndex((event) => event.type === 'run.start' && event.runId === answer.run.id);
      expect(autonomyEnd).toBeGreaterThanOrEqual(0);
      expect(autonomyEnd).toBeLessThan(userStart);
      expect(events.slice(userStart).some((event) => event.runId === autonomyRunId)).toBe(false);
      const visible = await history(threadId);
      // (A new follow-up may already follow: the person's reply started a new silence.)
      expect(visible.slice(0, 4).map((message) => message.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
      expect(visible.filter((message) => message.runId === autonomyRunId)).toEqual([]);
      expectNoOverlap(await runs(threadId));
    });

    it('I8: a timer that comes due during a run is deferred and fires after it, never interleaved', async () => {
      const tag = 'deferred';
      const slow = Array.from({ length: 40 }, (_, index) => `word${index}`).join(' ');
      log.behaviour = (call) => (call.tag === tag && call.lastHuman === 'A delivery arrived.' ? { tokenDelayMs: 40, reply: `${slow}. Done.` } : {});
      const agentId = await agentWith(tag, fast({ delay: 100 }));
      const threadId = await threadOf(agentId);
      const planned = await server.services.autonomy.planFollowUp(ALICE.id, threadId, 'Is there anything else?');
      expect(planned?.state).toBe('pending');
      // A slow run that is not a person's message (those cancel timers): a webhook's.
      const { HumanMessage } = await import('@langchain/core/messages');
      await server.services.conversations.runTriggered(ALICE.id, threadId, {
        trigger: 'webhook',
        input: new HumanMessage({ content: 'A delivery arrived.', additional_kwargs: { synthetic: true, trigger_type: 'webhook' } }),
        meta: { hook_id: 'hook-1', delivery_id: 'delivery-1' },
      });
      await eventually(async () => (await runs(threadId)).some((run) => run.trigger === 'autonomy' && run.status !== 'running'));
      log.behaviour = () => ({});
      expect(server.logs.some((line) => line.msg === 'follow-up deferred' && line.timerId === planned!.id)).toBe(true);
      expectNoOverlap(await runs(threadId));
    });
  });

  describe('model errors', () => {
    it('I5: a failing model is retried a bounded number of times (each retry budgeted), the run ends with a reason, and follow-ups never burst', async () => {
      const tag = 'failing';
      log.behaviour = (call) => (call.tag === tag ? { fail: true } : {});
      const agentId = await agentWith(tag, fast({ delay: 200, maxPerSilence: 3, backoffMultiplier: 2 }));
      const threadId = await threadOf(agentId);
      const answer = await say(threadId, 'Hello?');
      expect(answer.run).toMatchObject({ status: 'failed', reason: expect.stringMatching(/^the model failed 3 times: /), error: { code: 'MODEL_ERROR' } });
      await eventually(async () => (await timers(threadId)).some((timer) => timer.stateReason === 'cap_per_silence'), 30_000);
      await sleep(300 + slack);
      log.behaviour = () => ({});
      const all = await timers(threadId);
      expect(all.map((timer) => timer.state)).toEqual(['fired', 'fired', 'fired', 'skipped']);
      // Each follow-up after a failure waited longer than the one before (backoff), none sooner.
      all.slice(0, 3).forEach((timer, index) => expect(Date.parse(timer.dueAt) - Date.parse(timer.createdAt)).toBeGreaterThanOrEqual(200 * 2 ** index));
      expect(log.replies(tag)).toBe(4 * 3); // the person's run and three follow-ups, three attempts each
      const autonomyRuns = (await runs(threadId)).filter((run) => run.trigger === 'autonomy');
      expect(autonomyRuns.map((run) => run.status)).toEqual(['failed', 'failed', 'failed']);
      // Every attempt of a follow-up was a budgeted model call (I5); the person's own run is not.
      const used = await new SqlTimerRepository((server.storage as SqlStorage).context).modelCallsUsed(ALICE.id, agentId, localDay(new Date(), 'UTC'));
      expect(used).toBe(9);
    });
  });

  describe('the evaluator (rules+model)', () => {
    it('picks the trigger by structured output; its reasoning goes to logs and the run record, never into the thread', async () => {
      const tag = 'evaluator';
      log.behaviour = (call) =>
        call.tag === tag
          ? call.kind === 'structured'
            ? { decision: { follow_up: true, trigger_type: 'task_incomplete', reasoning: 'SECRET-REASONING: the person is halfway through the migration' } }
            : { reply: `Half of the migration is done. [tag:${tag}]` }
          : {};
      const agentId = await agentWith(tag, fast({ triggerChooser: 'rules+model' }));
      const threadId = await threadOf(agentId);
      await say(threadId, 'Migrate the database');
      const fired = await eventually(async () => (await timers(threadId)).find((timer) => timer.state === 'fired'));
      await eventually(async () => (await runs(threadId)).some((run) => run.trigger === 'autonomy' && run.status === 'succeeded'));
      await eventually(async () => (await timers(threadId)).some((timer) => timer.stateReason === 'cap_per_silence'));
      log.behaviour = () => ({});
      expect(fired).toMatchObject({ triggerType: 'task_incomplete', reason: expect.stringContaining('SECRET-REASONING') });
      const run = (await runs(threadId)).find((entry) => entry.trigger === 'autonomy')!;
      expect(run.meta.trigger_reason).toContain('SECRET-REASONING');
      expect(JSON.stringify(await history(threadId, true))).not.toContain('SECRET-REASONING');
      expect(server.logs.some((line) => line.msg === 'follow-up evaluator decided' && String(line.reasoning).includes('SECRET-REASONING'))).toBe(true);
      expect(log.structured(tag)).toBe(1); // the cap was reached before a second evaluation
    });

    it('I5: a declining evaluator records why; evaluator calls spend the budget too', async () => {
      const tag = 'evaluator-no';
      log.behaviour = (call) => (call.tag === tag ? (call.kind === 'structured' ? { decision: { follow_up: false, trigger_type: 'check_in', reasoning: 'nothing open' } } : { reply: `All set. [tag:${tag}]` }) : {});
      const agentId = await agentWith(tag, fast({ triggerChooser: 'rules+model', modelCallsPerDay: 1 }));
      const first = await threadOf(agentId);
      await say(first, 'Thanks');
      expect((await timers(first)).map((timer) => [timer.state, timer.stateReason])).toEqual([['skipped', 'evaluator_declined']]);
      // The budget (1) is spent: the next evaluation is not made; the rules decide.
      const second = await threadOf(agentId);
      await say(second, 'Thanks again');
      log.behaviour = () => ({});
      expect(log.structured(tag)).toBe(1);
      expect((await timers(second))[0]).toMatchObject({ state: 'pending', triggerType: 'check_in' });
    });
  });

  describe('a thread with only autonomous activity', () => {
    it('falls back in its memory query as seed 000 says (no source: ERROR, no search), history shows only the agent\'s replies, and no follow-up is planned where nobody wrote', async () => {
      const tag = 'autonomous-only';
      const agentId = await agentWith(tag, fast({ maxPerSilence: 2 }));
      await server.request('POST', `/api/agents/${agentId}/memories`, { body: { content: 'Continue our conversation naturally about gardens' } });
      const threadId = await threadOf(agentId);
      // Asked for explicitly, a follow-up runs on a thread nobody wrote in; after it, none is planned: there is no person's silence.
      await server.services.autonomy.planFollowUp(ALICE.id, threadId, 'Welcome!');
      await eventually(async () => (await timers(threadId)).some((timer) => timer.state === 'skipped' && timer.stateReason === 'no_person'));
      expect((await timers(threadId)).filter((timer) => timer.stateReason === 'cap_per_silence')).toEqual([]);
      const autonomyRuns = (await runs(threadId)).map((run) => run.id);
      expect(autonomyRuns).toHaveLength(1);
      for (const runId of autonomyRuns) {
        expect(server.logs.some((line) => line.runId === runId && line.msg === 'Empty thread - no query source available for memory retrieval' && line.level === 50)).toBe(true);
        expect(server.logs.some((line) => line.runId === runId && line.msg === 'Memory query source selected')).toBe(false);
      }
      expect((await history(threadId)).map((message) => message.role)).toEqual(['assistant']);
      expect((await server.request('GET', `/api/threads/${threadId}`)).body.lastUserActivityAt).toBeNull();

      // With a real message before it, the follow-up searches with that message.
      const other = await threadOf(agentId);
      await say(other, 'Tell me about tomatoes');
      const fired = await eventually(async () => (await timers(other)).find((timer) => timer.state === 'fired' && timer.runId));
      await eventually(async () => server.logs.some((line) => line.runId === fired.runId && line.msg === 'Memory query source selected'));
      expect(server.logs.find((line) => line.runId === fired.runId && line.msg === 'Memory query source selected')).toMatchObject({ querySource: 'last_real_user_message', query: 'Tell me about tomatoes' });
    });
  });

  describe('a policy change re-plans pending follow-ups (I5)', () => {
    const put = (agentId: string, policy: Json, token = ALICE.token) => server.request('PUT', `/api/agents/${agentId}/autonomy`, { token, body: policy });
    const pendingOf = async (threadId: string) => {
      const [timer] = await timers(threadId);
      expect(timer!.state).toBe('pending');
      return timer!;
    };

    it('I5: raising minDelayMs re-plans a pending follow-up from its creation: it does not fire before the new minimum', async () => {
      const tag = 'replan-min';
      const agentId = await agentWith(tag, fast({ delay: 1_000 }));
      const threadId = await threadOf(agentId);
      await say(threadId, 'Hello');
      const before = await pendingOf(threadId);
      expect((await put(agentId, fast({ delay: 1_000, minDelayMs: 60_000 }))).status).toBe(200);
      const after = (await timers(threadId)).find((timer) => timer.id === before.id)!;
      expect(after).toMatchObject({ state: 'pending' });
      expect(Date.parse(after.dueAt) - Date.parse(after.createdAt)).toBe(60_000);
      // Past the old due time it has still not fired, and no model was called for it.
      await waitFor(() => Date.now() > Date.parse(before.dueAt) + 500 + slack * 2, 15_000, 'the old due time to pass');
      expect((await timers(threadId)).map((timer) => [timer.id, timer.state])).toEqual([[before.id, 'pending']]);
      expect(log.syntheticReplies(tag)).toBe(0);
    });

    it('I5: lowering maxDelayMs or a trigger\'s delay re-plans a pending follow-up earlier: it fires then, not at the old later time', async () => {
      const capped = 'replan-max';
      const cappedAgent = await agentWith(capped, fast({ delay: 300_000 }));
      const cappedThread = await threadOf(cappedAgent);
      await say(cappedThread, 'Hello');
      const first = await pendingOf(cappedThread);
      expect((await put(cappedAgent, fast({ delay: 300_000, maxDelayMs: 200 }))).status).toBe(200);
      await waitFor(async () => (await timers(cappedThread)).some((timer) => timer.id === first.id && timer.state === 'fired'), 15_000 + slack * 10, 'the re-planned follow-up to fire');
      await waitFor(async () => (await runs(cappedThread)).some((run) => run.trigger === 'autonomy' && run.status === 'succeeded'), 15_000 + slack * 10, 'its run');
      expect(log.syntheticReplies(capped)).toBe(1);

      const shorter = 'replan-delay';
      const shorterAgent = await agentWith(shorter, fast({ delay: 300_000 }));
      const shorterThread = await threadOf(shorterAgent);
      await say(shorterThread, 'Hello');
      const second = await pendingOf(shorterThread);
      expect((await put(shorterAgent, fast({ delay: 200 }))).status).toBe(200);
      await waitFor(async () => (await timers(shorterThread)).some((timer) => timer.id === second.id && timer.state === 'fired'), 15_000 + slack * 10, 'the re-planned follow-up to fire');
      await waitFor(async () => (await runs(shorterThread)).some((run) => run.trigger === 'autonomy' && run.status === 'succeeded'), 15_000 + slack * 10, 'its run');
      expect(log.syntheticReplies(shorter)).toBe(1);
    });

    it('I5: narrowing quiet hours re-plans a follow-up deferred to their end: it fires at its own delay; quiet hours that now cover it in drop mode drop it', async () => {
      const tag = 'replan-quiet';
      const quiet = quietHoursAroundNow('Europe/Berlin');
      const agentId = await agentWith(tag, fast({ delay: 200, timeZone: 'Europe/Berlin', quietHours: { ...quiet, mode: 'defer' } }));
      const threadId = await threadOf(agentId);
      await say(threadId, 'Hello');
      const deferred = await pendingOf(threadId);
      expect(Date.parse(deferred.dueAt) - Date.now()).toBeGreaterThan(60 * 60_000);
      expect((await put(agentId, fast({ delay: 200, timeZone: 'Europe/Berlin' }))).status).toBe(200);
      await waitFor(async () => (await timers(threadId)).some((timer) => timer.id === deferred.id && timer.state === 'fired'), 15_000 + slack * 10, 'the re-planned follow-up to fire');
      await waitFor(async () => (await runs(threadId)).some((run) => run.trigger === 'autonomy' && run.status === 'succeeded'), 15_000 + slack * 10, 'its run');
      expect(log.syntheticReplies(tag)).toBe(1);

      const dropTag = 'replan-quiet-drop';
      const dropAgent = await agentWith(dropTag, fast({ delay: 60_000, timeZone: 'Europe/Berlin' }));
      const dropThread = await threadOf(dropAgent);
      await say(dropThread, 'Hello');
      const planned = await pendingOf(dropThread);
      expect((await put(dropAgent, fast({ delay: 60_000, timeZone: 'Europe/Berlin', quietHours: { ...quiet, mode: 'drop' } }))).status).toBe(200);
      expect((await timers(dropThread)).map((timer) => [timer.id, timer.state, timer.stateReason])).toEqual([[planned.id, 'dropped', 'quiet_hours']]);
      expect((await server.request('GET', `/api/threads/${dropThread}/autonomy`)).body).toMatchObject({ enabled: true, pending: [] });
      expect(log.syntheticReplies(dropTag)).toBe(0);
    });

    it('I5: disabling autonomy cancels the pending follow-up at once: the thread shows enabled false and nothing pending', async () => {
      const tag = 'replan-off';
      const agentId = await agentWith(tag, fast({ delay: 60_000 }));
      const threadId = await threadOf(agentId);
      const { events, socket } = await subscribe(threadId);
      await say(threadId, 'Hello');
      const pending = await pendingOf(threadId);
      expect((await put(agentId, { ...fast({ delay: 60_000 }), enabled: false })).status).toBe(200);
      expect((await server.request('GET', `/api/threads/${threadId}/autonomy`)).body).toMatchObject({ enabled: false, pending: [] });
      expect((await timers(threadId)).map((timer) => [timer.id, timer.state, timer.stateReason])).toEqual([[pending.id, 'cancelled', 'autonomy turned off for this agent']]);
      await waitFor(() => events.some((event) => event.type === 'timer.cancel' && event.timerId === pending.id), 10_000, 'the timer.cancel event');
      socket.close();
      expect(events.find((event) => event.type === 'timer.cancel' && event.timerId === pending.id)).toMatchObject({ reason: 'autonomy turned off for this agent' });

      // The same through PATCH /api/agents/:id with a new autonomy policy.
      const patchedAgent = await agentWith(`${tag}-patch`, fast({ delay: 60_000 }));
      const patchedThread = await threadOf(patchedAgent);
      await say(patchedThread, 'Hello');
      const patchedTimer = await pendingOf(patchedThread);
      expect((await server.request('PATCH', `/api/agents/${patchedAgent}`, { body: { autonomy: { ...fast({ delay: 60_000 }), enabled: false } } })).status).toBe(200);
      expect((await timers(patchedThread)).map((timer) => [timer.id, timer.state, timer.stateReason])).toEqual([[patchedTimer.id, 'cancelled', 'autonomy turned off for this agent']]);
    });

    it('I12: Bob\'s PUT on Alice\'s agent is 404 and moves none of her follow-ups', async () => {
      const agentId = await agentWith('replan-owner', fast({ delay: 60_000 }));
      const threadId = await threadOf(agentId);
      await say(threadId, 'Hello');
      const before = await pendingOf(threadId);
      for (const policy of [fast({ delay: 60_000, minDelayMs: 120_000 }), fast({ delay: 100 }), { ...fast(), enabled: false }]) {
        const response = await put(agentId, policy, BOB.token);
        expect(response.status).toBe(404);
        expect(response.body.error.code).toBe('AGENT_NOT_FOUND');
      }
      expect(await timers(threadId)).toEqual([before]);
      expect((await server.request('GET', `/api/agents/${agentId}/autonomy`)).body.policy).toMatchObject({ enabled: true, minDelayMs: 10 });
    });

    it('I7: a follow-up coming due while its policy is re-set over and over fires exactly once', async () => {
      const tag = 'replan-race';
      const agentId = await agentWith(tag, fast({ delay: 300 }));
      const threadId = await threadOf(agentId);
      await say(threadId, 'Hello');
      const pending = await pendingOf(threadId);
      let round = 0;
      await waitFor(
        async () => {
          // The same delays each time (re-planned to the same due time), but each PUT re-plans it.
          expect((await put(agentId, fast({ delay: 300, minDelayMs: round++ % 2 === 0 ? 10 : 20 }))).status).toBe(200);
          return (await timers(threadId)).some((timer) => timer.id === pending.id && timer.state === 'fired');
        },
        15_000 + slack * 10,
        'the follow-up to fire',
      );
      await waitFor(async () => (await runs(threadId)).some((run) => run.trigger === 'autonomy' && run.status === 'succeeded'), 15_000 + slack * 10, 'its run');
      await server.services.jobs.schedule({ queue: FOLLOW_UP_QUEUE, key: pending.id, dueAt: new Date(), payload: { timerId: pending.id } });
      await waitFor(async () => (await server.services.jobs.depth()).ready === 0, 10_000, 'the extra delivery');
      expect((await timers(threadId)).filter((timer) => timer.id === pending.id).map((timer) => timer.state)).toEqual(['fired']);
      expect((await runs(threadId)).filter((run) => run.trigger === 'autonomy')).toHaveLength(1);
      expect(log.syntheticReplies(tag)).toBe(1);
    });

    it('lists an agent\'s pending timers for its owner only', async () => {
      const agentId = await agentWith('replan-list', fast({ delay: 60_000 }));
      const threads = [await threadOf(agentId), await threadOf(agentId)];
      for (const threadId of threads) await say(threadId, 'Hello');
      const repository = new SqlTimerRepository((server.storage as SqlStorage).context);
      const listed = await repository.listPendingByAgent(ALICE.id, agentId, { limit: 100 });
      expect(listed.map((timer) => timer.threadId).sort()).toEqual([...threads].sort());
      expect(listed.every((timer) => timer.state === 'pending' && timer.agentId === agentId)).toBe(true);
      expect(await repository.listPendingByAgent(BOB.id, agentId, { limit: 100 })).toEqual([]);
    });
  });

  describe('API', () => {
    it('I11/I12: policies are strict and owner-only; a thread\'s follow-ups are listed, cancelled, paused and resumed by its owner only', async () => {
      const agentId = await agentWith('api', fast({ delay: 60_000 }));
      const policy = await server.request('GET', `/api/agents/${agentId}/autonomy`);
      expect(policy.body.policy).toMatchObject({ enabled: true, maxPerSilence: 1, triggerChooser: 'rules', quietHours: null, timeZone: 'UTC' });
      for (const bad of [{ enabled: true, bogus: 1 }, { timeZone: 'Mars/Olympus' }, { minDelayMs: 5_000, maxDelayMs: 1_000 }, { quietHours: { start: '25:00', end: '07:00' } }, { delaysMs: { check_in: 1 } }]) {
        const response = await server.request('PUT', `/api/agents/${agentId}/autonomy`, { body: bad });
        expect(response.status, JSON.stringify(bad)).toBe(400);
        expect(response.body.error.code).toBe('VALIDATION_FAILED');
      }
      expect((await server.request('GET', `/api/agents/${agentId}/autonomy`)).body.policy.enabled).toBe(true); // nothing half-written
      expect((await server.request('GET', `/api/agents/${agentId}/autonomy`, { token: BOB.token })).body.error.code).toBe('AGENT_NOT_FOUND');
      expect((await server.request('PUT', `/api/agents/${agentId}/autonomy`, { token: BOB.token, body: { enabled: false } })).status).toBe(404);
      const defaults = await server.request('GET', '/api/agents/default/autonomy');
      expect(defaults.status === 404 || defaults.body.policy.enabled === false).toBe(true);

      const threadId = await threadOf(agentId);
      await say(threadId, 'Hello');
      const listed = await server.request('GET', `/api/threads/${threadId}/timers`);
      expect(listed.body.timers).toHaveLength(1);
      const timerId = listed.body.timers[0].id as string;
      expect((await server.request('GET', `/api/threads/${threadId}/autonomy`)).body).toMatchObject({ enabled: true, paused: false, pending: [{ id: timerId }] });

      for (const [method, path] of [
        ['GET', `/api/threads/${threadId}/timers`],
        ['GET', `/api/threads/${threadId}/autonomy`],
        ['DELETE', `/api/threads/${threadId}/timers/${timerId}`],
        ['POST', `/api/threads/${threadId}/autonomy/pause`],
        ['POST', `/api/threads/${threadId}/autonomy/resume`],
      ] as const) {
        const response = await server.request(method, path, { token: BOB.token });
        expect(response.status, `${method} ${path}`).toBe(404);
        expect(response.body.error.code).toBe('THREAD_NOT_FOUND');
      }
      const bobThread = await threadOf(await agentWith('api-bob', fast(), server, BOB.token), server, BOB.token);
      expect((await server.request('DELETE', `/api/threads/${bobThread}/timers/${timerId}`, { token: BOB.token })).body.error.code).toBe('TIMER_NOT_FOUND');
      expect((await server.request('GET', `/api/threads/${threadId}/timers?state=some`)).body.error.code).toBe('VALIDATION_FAILED');
      expect((await server.request('DELETE', `/api/threads/${threadId}/timers/nope`)).body.error.code).toBe('TIMER_NOT_FOUND');

      const cancelled = await server.request('DELETE', `/api/threads/${threadId}/timers/${timerId}`);
      expect(cancelled.body).toMatchObject({ id: timerId, state: 'cancelled', stateReason: 'cancelled by its owner' });
      const again = await server.request('DELETE', `/api/threads/${threadId}/timers/${timerId}`);
      expect(again.status).toBe(409);
      expect(again.body.error.code).toBe('TIMER_NOT_PENDING');

      const paused = await server.request('POST', `/api/threads/${threadId}/autonomy/pause`);
      expect(paused.body).toMatchObject({ paused: true, pending: [] });
      await say(threadId, 'While paused');
      expect((await server.request('GET', `/api/threads/${threadId}/timers`)).body.timers).toEqual([]);
      const resumed = await server.request('POST', `/api/threads/${threadId}/autonomy/resume`);
      expect(resumed.body).toMatchObject({ paused: false, pending: [{ state: 'pending', triggerType: 'question_unanswered' }] });
    });

    it('resume plans no follow-up where nobody wrote (no_person), and on a thread that was not paused leaves the pending follow-up as it was; owner-only', async () => {
      const tag = 'resume-nobody';
      const agentId = await agentWith(tag, fast({ maxPerSilence: 2 }));
      // A thread only the agent wrote in (as a schedule's or a webhook's): its reply has the last word.
      const lonely = await threadOf(agentId);
      await server.services.autonomy.planFollowUp(ALICE.id, lonely, 'Welcome!');
      await waitFor(async () => (await timers(lonely)).some((timer) => timer.stateReason === 'no_person'), 15_000, 'the no_person skip after the explicit follow-up');
      expect((await history(lonely)).map((message) => message.role)).toEqual(['assistant']);
      expect((await server.request('POST', `/api/threads/${lonely}/autonomy/pause`)).body).toMatchObject({ paused: true });
      expect((await server.request('POST', `/api/threads/${lonely}/autonomy/resume`, { token: BOB.token })).body.error.code).toBe('THREAD_NOT_FOUND');
      const resumed = await server.request('POST', `/api/threads/${lonely}/autonomy/resume`);
      expect(resumed.body).toMatchObject({ paused: false, pending: [] });
      expect((await timers(lonely)).filter((timer) => timer.state === 'pending' || timer.state === 'fired').length).toBe(1); // only the explicit one

      // Resume on a thread that is not paused: nothing to resume; its pending follow-up keeps its id and due time.
      const busy = await threadOf(await agentWith(`${tag}-2`, fast({ delay: 60_000 })));
      await say(busy, 'Hello');
      const [pending] = (await server.request('GET', `/api/threads/${busy}/timers`)).body.timers as Json[];
      const again = await server.request('POST', `/api/threads/${busy}/autonomy/resume`);
      expect(again.body).toMatchObject({ paused: false, pending: [{ id: pending!.id, dueAt: pending!.dueAt, state: 'pending' }] });
      expect((await timers(busy)).map((timer) => timer.state)).toEqual(['pending']);
    });

    it('I12: a deleted thread\'s autonomy state goes with it: a thread another user makes with its id is not paused and has no silence of its own yet', async () => {
      // The LangGraph protocol lets a client choose a thread's id; ids are one namespace.
      const threadId = randomUUID();
      expect((await server.request('POST', '/threads', { body: { thread_id: threadId } })).status).toBe(200);
      await say(threadId, 'Hello');
      expect((await server.request('POST', `/api/threads/${threadId}/autonomy/pause`)).body).toMatchObject({ paused: true });
      expect((await server.request('DELETE', `/api/threads/${threadId}`)).status).toBe(204);

      expect((await server.request('POST', '/threads', { token: BOB.token, body: { thread_id: threadId } })).status).toBe(200);
      expect((await server.request('GET', `/api/threads/${threadId}/autonomy`, { token: BOB.token })).body).toMatchObject({ paused: false, pending: [] });
      const timers = new SqlTimerRepository((server.storage as SqlStorage).context);
      expect(await timers.threadState(threadId)).toEqual({ paused: false, lastUserMessageAt: null });
    });
  });

  describe('restarts (I7)', () => {
    it('I7: a timer that came due while the server was down fires exactly once after the restart', async () => {
      const tag = 'downtime';
      // The shared server restarts (one server less holding PostgreSQL connections meanwhile).
      try {
        const agentId = await agentWith(tag, fast({ delay: 1_000 }), server);
        const threadId = await threadOf(agentId, server);
        await say(threadId, 'Hello', server);
        const [timer] = await timers(threadId, server);
        expect(timer!.state).toBe('pending');
        await server.services.jobs.stop(); // the scheduler is down…
        await sleep(1_300); // …while the timer comes due
        server = await server.restart();
        await eventually(async () => (await runs(threadId, server)).some((run) => run.trigger === 'autonomy' && run.status === 'succeeded'));
        await sleep(500 + slack * 2);
        expect(log.syntheticReplies(tag)).toBe(1);
        expect((await timers(threadId, server)).find((entry) => entry.id === timer!.id)).toMatchObject({ state: 'fired' });
        expect((await history(threadId, true, server)).filter((message) => message.id === followUpMessageId(timer!.id))).toHaveLength(1);
      } finally {
        log.behaviour = () => ({});
      }
    });

    it('I7: a fire cut short by a shutdown is finished after the restart, not repeated', async () => {
      const tag = 'shutdown-mid-fire';
      log.behaviour = (call) => (call.tag === tag && call.synthetic ? { tokenDelayMs: 60, reply: 'one two three four five six seven eight nine ten eleven twelve' } : {});
      // The shared server restarts (one server less holding PostgreSQL connections meanwhile).
      try {
        const agentId = await agentWith(tag, fast({ delay: 50 }), server);
        const threadId = await threadOf(agentId, server);
        const { events, socket } = await subscribe(threadId, server);
        await say(threadId, 'Hello', server);
        await eventually(async () => events.some((event) => event.type === 'message.delta' && event.runId !== undefined && events.some((start) => start.type === 'run.start' && start.trigger === 'autonomy' && start.runId === event.runId)));
        socket.close();
        server = await server.restart(); // graceful: the follow-up's run is cancelled as the server stops
        const [timer] = (await timers(threadId, server)).filter((entry) => entry.state === 'fired');
        await eventually(async () => (await runs(threadId, server)).filter((run) => run.trigger === 'autonomy').some((run) => run.status === 'succeeded'), 30_000);
        await sleep(500 + slack * 2);
        log.behaviour = () => ({});
        const autonomyRuns = (await runs(threadId, server)).filter((run) => run.trigger === 'autonomy');
        expect(autonomyRuns.map((run) => [run.status, run.reason])).toEqual([
          ['cancelled', STOPPING_REASON],
          ['succeeded', null],
        ]);
        const all = await history(threadId, true, server);
        expect(all.filter((message) => message.id === followUpMessageId(timer!.id))).toHaveLength(1);
        expect(all.filter((message) => message.visibility === 'user').map((message) => message.role)).toEqual(['user', 'assistant', 'assistant']);
        expect((await timers(threadId, server)).find((entry) => entry.id === timer!.id)).toMatchObject({ state: 'fired', runId: autonomyRuns[1]!.id });
      } finally {
        log.behaviour = () => ({});
      }
    });
  });
}

/** Runs on one thread never overlap in time (I8). */
function expectNoOverlap(list: Json[]): void {
  const spans = list.map((run) => [Date.parse(run.startedAt), Date.parse(run.endedAt ?? run.startedAt)] as const).sort((a, b) => a[0] - b[0]);
  for (let index = 1; index < spans.length; index++) expect(spans[index]![0]).toBeGreaterThanOrEqual(spans[index - 1]![1]);
}

/** Quiet hours from an hour ago to two hours ahead, local to `timeZone`, as HH:MM. */
function quietHoursAroundNow(timeZone: string): { start: string; end: string } {
  const now = localMinuteOfDay(new Date(), timeZone);
  const clock = (minute: number) => {
    const wrapped = ((minute % 1440) + 1440) % 1440;
    return `${String(Math.floor(wrapped / 60)).padStart(2, '0')}:${String(wrapped % 60).padStart(2, '0')}`;
  };
  return { start: clock(now - 60), end: clock(now + 120) };
}

function minutes(clock: string): number {
  const [hours, rest] = clock.split(':').map(Number);
  return hours! * 60 + rest!;
}
