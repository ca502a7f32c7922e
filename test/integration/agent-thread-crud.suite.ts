import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SqlContext } from '../../src/adapters/sql/database.js';
import { SqlProtocolStore } from '../../src/adapters/sql/protocol-repository.js';
import type { SqlStorage } from '../../src/adapters/sql/sql-storage.js';
import { SqlTimerRepository } from '../../src/adapters/sql/timer-repository.js';
import { FOLLOW_UP_QUEUE } from '../../src/app/autonomy/autonomy-dependencies.js';
import { ALICE, BOB, startTestServer, type Backend, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';

type Json = Record<string, any>;

/** A policy whose follow-up stays pending for the whole test (long delay). */
const slowFollowUps: Json = {
  enabled: true,
  delaysMs: { check_in: 600_000, question_unanswered: 600_000, task_incomplete: 600_000, waiting_for_decision: 600_000 },
  maxDelayMs: 600_000,
};

/** Updating and deleting agents, renaming and deleting threads, with what deletion stops. */
export function agentThreadCrudSuite(backend: () => Backend): void {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer(backend());
  });
  afterAll(async () => {
    await server?.destroy();
  });

  async function newAgent(token = ALICE.token, extra: Json = {}): Promise<string> {
    const id = `a-${randomUUID().slice(0, 8)}`;
    const response = await server.request('POST', '/api/agents', { token, body: { id, name: 'Original', ...extra } });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    return id;
  }

  async function newThread(agentId: string, token = ALICE.token, title?: string): Promise<string> {
    const response = await server.request('POST', '/api/threads', { token, body: { agentId, ...(title ? { title } : {}) } });
    expect(response.status).toBe(201);
    return response.body.id as string;
  }

  function timers() {
    return new SqlTimerRepository((server.storage as SqlStorage).context);
  }

  /** PostgreSQL: the thread's rows in the event bus's tables. */
  async function eventRowsOf(threadId: string): Promise<{ events: string; counters: string }> {
    const { rows } = await sql<{ events: string; counters: string }>`
      SELECT (SELECT count(*) FROM thread_events WHERE thread_id = ${threadId}) AS events,
             (SELECT count(*) FROM thread_event_counters WHERE thread_id = ${threadId}) AS counters`.execute((server.storage as SqlStorage).context.db);
    return rows[0]!;
  }

  async function pendingTimer(threadId: string): Promise<string> {
    const timer = await server.services.autonomy.planFollowUp(ALICE.id, threadId, 'Which of the two do you want?');
    expect(timer?.state).toBe('pending');
    return timer!.id;
  }

  describe('POST /api/agents', () => {
    it('I14: takes the agent\'s context settings, as PUT /api/agents/{id}/context does; another user cannot read them', async () => {
      const agentId = await newAgent(ALICE.token, { context: { maxTokens: 6000, answerTokens: 1000 } });
      const context = await server.request('GET', `/api/agents/${agentId}/context`);
      expect(context.status).toBe(200);
      expect(context.body).toMatchObject({ maxTokens: 6000, answerTokens: 1000, foldAt: 0.75, keepRecent: 0.4 });
      const bobs = await server.request('GET', `/api/agents/${agentId}/context`, { token: BOB.token });
      expect(bobs.status).toBe(404);
      expect(bobs.body.error.code).toBe('AGENT_NOT_FOUND');
      expect((await server.request('GET', `/api/agents/${agentId}`, { token: BOB.token })).status).toBe(404);
    });

    it('I14, I11: a system prompt over half of the budget given at creation, or a bad context field, answers 400 VALIDATION_FAILED and creates nothing', async () => {
      const before = (await server.request('GET', '/api/agents')).body.agents.map((agent: Json) => agent.id);
      const long = 'Always answer in the voice of a careful gardener who explains every step. '.repeat(260); // ~19,000 characters
      const id = `a-${randomUUID().slice(0, 8)}`;
      const over = await server.request('POST', '/api/agents', { body: { id, name: 'Verbose', systemPrompt: long, context: { maxTokens: 1000 } } });
      expect(over.status, JSON.stringify(over.body)).toBe(400);
      expect(over.body.error.code).toBe('VALIDATION_FAILED');
      expect(over.body.error.message).toMatch(/system prompt takes \d+ tokens, more than half of the agent's input budget/);
      const bad = await server.request('POST', '/api/agents', { body: { id, name: 'Bad', context: { maxTokens: 10, deleteHistory: true } } });
      expect(bad.status).toBe(400);
      expect(bad.body.error.code).toBe('VALIDATION_FAILED');
      expect((bad.body.error.details as Array<{ path: string }>).map((detail) => detail.path)).toContain('/context/maxTokens');
      expect((await server.request('GET', `/api/agents/${id}`)).status).toBe(404);
      expect((await server.request('GET', '/api/agents')).body.agents.map((agent: Json) => agent.id)).toEqual(before);
    });
  });

  describe('PATCH /api/agents/{id}', () => {
    it('changes name, system prompt, model and autonomy policy', async () => {
      const agentId = await newAgent();
      const response = await server.request('PATCH', `/api/agents/${agentId}`, {
        body: { name: 'Renamed', systemPrompt: 'Be terse.', model: 'demo', autonomy: { enabled: true, maxPerDay: 3 } },
      });
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      expect(response.body).toMatchObject({ id: agentId, name: 'Renamed', systemPrompt: 'Be terse.', model: 'demo' });
      expect((await server.request('GET', `/api/agents/${agentId}`)).body).toMatchObject({ name: 'Renamed', systemPrompt: 'Be terse.' });
      expect((await server.request('GET', `/api/agents/${agentId}/autonomy`)).body.policy).toMatchObject({ enabled: true, maxPerDay: 3 });
      // Fields left out stay as they were; model null means the server's default.
      const partial = await server.request('PATCH', `/api/agents/${agentId}`, { body: { model: null } });
      expect(partial.body).toMatchObject({ name: 'Renamed', model: null });
    });

    it('I11: invalid fields answer 400 VALIDATION_FAILED naming each field, and change nothing', async () => {
      const agentId = await newAgent();
      const bad = await server.request('PATCH', `/api/agents/${agentId}`, { body: { name: '   ', model: 'gpt-4', autonomy: { maxPerDay: -1 } } });
      expect(bad.status).toBe(400);
      expect(bad.body.error.code).toBe('VALIDATION_FAILED');
      const paths = (bad.body.error.details as Array<{ path: string }>).map((detail) => detail.path);
      expect(paths).toEqual(expect.arrayContaining(['/name', '/model', '/autonomy/maxPerDay']));
      const unknown = await server.request('PATCH', `/api/agents/${agentId}`, { body: { id: 'other' } });
      expect(unknown.status).toBe(400);
      expect(unknown.body.error.code).toBe('VALIDATION_FAILED');
      const empty = await server.request('PATCH', `/api/agents/${agentId}`, { body: {} });
      expect(empty.status).toBe(400);
      expect((await server.request('GET', `/api/agents/${agentId}`)).body.name).toBe('Original');
      const missing = await server.request('PATCH', '/api/agents/no-such-agent', { body: { name: 'x' } });
      expect(missing.status).toBe(404);
      expect(missing.body.error.code).toBe('AGENT_NOT_FOUND');
    });

    it("I12: another user's agent answers 404 to PATCH and DELETE and is left unchanged", async () => {
      const agentId = await newAgent();
      const patch = await server.request('PATCH', `/api/agents/${agentId}`, { token: BOB.token, body: { name: 'Bob was here' } });
      expect(patch.status).toBe(404);
      expect(patch.body.error.code).toBe('AGENT_NOT_FOUND');
      const remove = await server.request('DELETE', `/api/agents/${agentId}`, { token: BOB.token });
      expect(remove.status).toBe(404);
      expect(remove.body.error.code).toBe('AGENT_NOT_FOUND');
      expect((await server.request('GET', `/api/agents/${agentId}`)).body.name).toBe('Original');
    });
  });

  describe('DELETE /api/agents/{id}', () => {
    it('deletes the agent, its threads, and stops its follow-ups, schedules and webhooks', async () => {
      const agentId = await newAgent(ALICE.token, { autonomy: slowFollowUps });
      const keptAgent = await newAgent();
      const threadId = await newThread(agentId);
      const keptThread = await newThread(keptAgent);
      const timerId = await pendingTimer(threadId);
      const schedule = await server.request('POST', '/api/schedules', { body: { name: 'nightly', agentId, task: 'sum up', timing: { kind: 'cron', cron: '0 3 * * *' } } });
      expect(schedule.status, JSON.stringify(schedule.body)).toBe(201);
      const keptSchedule = await server.request('POST', '/api/schedules', { body: { name: 'kept', agentId: keptAgent, task: 'x', timing: { kind: 'cron', cron: '0 3 * * *' } } });
      const hook = await server.request('POST', '/api/hooks', { body: { name: 'push', agentId, taskTemplate: 'a push' } });
      expect(hook.status, JSON.stringify(hook.body)).toBe(201);

      const removed = await server.request('DELETE', `/api/agents/${agentId}`);
      expect(removed.status).toBe(204);

      expect((await server.request('GET', `/api/agents/${agentId}`)).status).toBe(404);
      expect((await server.request('GET', `/api/threads/${threadId}`)).status).toBe(404);
      expect((await server.request('GET', `/api/schedules/${schedule.body.id}`)).status).toBe(404);
      expect((await server.request('GET', `/api/hooks/${hook.body.id}`)).status).toBe(404);
      expect(await timers().getForUser(ALICE.id, timerId)).toBeUndefined();
      // Everything of another agent stays.
      expect((await server.request('GET', `/api/threads/${keptThread}`)).status).toBe(200);
      expect((await server.request('GET', `/api/schedules/${keptSchedule.body.id}`)).status).toBe(200);
      // I11: deleting again is a 404 with its code.
      const again = await server.request('DELETE', `/api/agents/${agentId}`);
      expect(again.status).toBe(404);
      expect(again.body.error.code).toBe('AGENT_NOT_FOUND');
    });
  });

  describe('PATCH and DELETE /api/threads/{id}', () => {
    it('renames a thread without moving it in the activity order; null clears the title', async () => {
      const agentId = await newAgent();
      const older = await newThread(agentId, ALICE.token, 'first');
      // Threads made in the same millisecond tie on activity (then the id decides): let the clock move on.
      const madeAt = Date.now();
      await waitFor(() => Date.now() > madeAt, 1_000, 'the clock to pass the first thread');
      const newer = await newThread(agentId, ALICE.token, 'second');
      const renamed = await server.request('PATCH', `/api/threads/${older}`, { body: { title: '  Renamed  ' } });
      expect(renamed.status).toBe(200);
      expect(renamed.body).toMatchObject({ id: older, title: 'Renamed' });
      const order = (await server.request('GET', '/api/threads?limit=100')).body.threads.map((thread: Json) => thread.id) as string[];
      expect(order.indexOf(newer)).toBeLessThan(order.indexOf(older));
      const cleared = await server.request('PATCH', `/api/threads/${older}`, { body: { title: null } });
      expect(cleared.body.title).toBeNull();
    });

    it('I11: a bad title answers 400 VALIDATION_FAILED at /title; an unknown thread 404 THREAD_NOT_FOUND', async () => {
      const threadId = await newThread(await newAgent(), ALICE.token, 'kept');
      for (const body of [{ title: '' }, { title: 42 }, { title: 'x'.repeat(201) }, {}, { title: 'ok', agentId: 'other' }]) {
        const response = await server.request('PATCH', `/api/threads/${threadId}`, { body });
        expect(response.status, JSON.stringify(body)).toBe(400);
        expect(response.body.error.code).toBe('VALIDATION_FAILED');
      }
      const bad = await server.request('PATCH', `/api/threads/${threadId}`, { body: { title: '' } });
      expect(bad.body.error.details.map((detail: Json) => detail.path)).toContain('/title');
      expect((await server.request('GET', `/api/threads/${threadId}`)).body.title).toBe('kept');
      for (const method of ['PATCH', 'DELETE']) {
        const response = await server.request(method, '/api/threads/no-such-thread', method === 'PATCH' ? { body: { title: 'x' } } : {});
        expect(response.status).toBe(404);
        expect(response.body.error.code).toBe('THREAD_NOT_FOUND');
      }
    });

    it("I12: another user cannot rename or delete a thread; it stays the owner's, unchanged", async () => {
      const threadId = await newThread(await newAgent(), ALICE.token, 'mine');
      const rename = await server.request('PATCH', `/api/threads/${threadId}`, { token: BOB.token, body: { title: 'theirs' } });
      expect(rename.status).toBe(404);
      expect(rename.body.error.code).toBe('THREAD_NOT_FOUND');
      const remove = await server.request('DELETE', `/api/threads/${threadId}`, { token: BOB.token });
      expect(remove.status).toBe(404);
      expect((await server.request('GET', `/api/threads/${threadId}`)).body.title).toBe('mine');
    });

    it('deletes a thread with its messages and checkpoints, its follow-ups and bound schedules', async () => {
      const agentId = await newAgent(ALICE.token, { autonomy: slowFollowUps });
      const threadId = await newThread(agentId);
      const sent = await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'hello' } });
      expect(sent.status).toBe(200);
      const timerId = await pendingTimer(threadId);
      const bound = await server.request('POST', '/api/schedules', { body: { name: 'here', agentId, target: 'thread', threadId, task: 'x', timing: { kind: 'cron', cron: '0 3 * * *' } } });
      expect(bound.status, JSON.stringify(bound.body)).toBe(201);

      if (backend().kind === 'postgres') await waitFor(async () => (await eventRowsOf(threadId)).counters === '1', 10_000, 'the thread\'s events to be stored');
      const removed = await server.request('DELETE', `/api/threads/${threadId}`);
      expect(removed.status).toBe(204);
      expect((await server.request('GET', `/api/threads/${threadId}`)).status).toBe(404);
      expect((await server.request('GET', `/api/threads/${threadId}/history`)).status).toBe(404);
      expect((await server.request('GET', '/api/threads?limit=100')).body.threads.map((thread: Json) => thread.id)).not.toContain(threadId);
      expect(await timers().getForUser(ALICE.id, timerId)).toBeUndefined();
      expect((await server.request('GET', `/api/schedules/${bound.body.id}`)).status).toBe(404);
      expect(await server.storage.checkpointer.getTuple({ configurable: { thread_id: threadId } })).toBeUndefined();
      const page = await server.storage.threads.history(ALICE.id, threadId, { visibility: 'all', limit: 10 });
      expect(page.messages).toEqual([]);
      if (backend().kind === 'postgres') {
        // Its events (what was said, kept for replay) and their counter go with it.
        expect(await eventRowsOf(threadId)).toEqual({ events: '0', counters: '0' });
      }
      // The agent itself stays usable.
      expect((await server.request('GET', `/api/agents/${agentId}`)).status).toBe(200);
    });
  });

  describe('a thread made again with a deleted thread\'s id', () => {
    it("I5, I7, I12: starts clean: the old thread's follow-ups (cancelled, fired) are not listed, not cancellable, not counted against its caps, and their jobs fire nothing; Bob sees none of it", async () => {
      const agentId = await newAgent(ALICE.token, { autonomy: { ...slowFollowUps, maxPerSilence: 2 } });
      // The LangGraph protocol lets a client choose a thread's id, so a deleted one comes back.
      const threadId = randomUUID();
      await server.services.conversations.createThread(ALICE.id, { id: threadId, agentId });
      // The old thread's first follow-up fired (its run never recorded: a process killed after the
      // claim, I7), and its second waits.
      const fired = await pendingTimer(threadId);
      expect(await timers().transition(fired, 'pending', 'fired', { runId: randomUUID(), firedAt: new Date().toISOString(), stateReason: null }, new Date().toISOString())).toMatchObject({ state: 'fired' });
      const waiting = await pendingTimer(threadId);
      expect(await timers().getForUser(ALICE.id, waiting)).toMatchObject({ attempt: 2 });
      const listing = async (token = ALICE.token) => server.request('GET', `/api/threads/${threadId}/timers?state=all&limit=100`, { token });
      expect((await listing()).body.timers.map((timer: Json) => [timer.id, timer.state])).toEqual([
        [waiting, 'pending'],
        [fired, 'fired'],
      ]);

      expect((await server.request('DELETE', `/api/threads/${threadId}`)).status).toBe(204);
      await server.services.conversations.createThread(ALICE.id, { id: threadId, agentId });

      expect((await listing()).body).toEqual({ timers: [] });
      expect((await server.request('GET', `/api/threads/${threadId}/autonomy`)).body).toMatchObject({ pending: [] });
      for (const timerId of [waiting, fired]) {
        const cancel = await server.request('DELETE', `/api/threads/${threadId}/timers/${timerId}`);
        expect([cancel.status, cancel.body.error.code]).toEqual([404, 'TIMER_NOT_FOUND']);
      }
      // The old follow-ups' jobs, delivered again, start nothing on the new thread (I7).
      for (const [attempt, timerId] of [waiting, fired].entries()) {
        await server.services.autonomy.fire({ id: randomUUID(), queue: FOLLOW_UP_QUEUE, key: timerId, dueAt: new Date().toISOString(), payload: { timerId }, attempt: attempt + 2 });
      }
      expect((await server.request('GET', `/api/threads/${threadId}/runs`)).body.runs).toEqual([]);
      expect((await server.request('GET', `/api/threads/${threadId}/history`)).body.messages).toEqual([]);
      // Its first follow-up is the first of its silence: the old thread's fired one counts for nothing (I5).
      const first = await pendingTimer(threadId);
      expect((await listing()).body.timers.map((timer: Json) => [timer.id, timer.state, timer.attempt])).toEqual([[first, 'pending', 1]]);

      // Bob: the thread is not found, as one nobody has; its timer is not his to cancel.
      const nobodys = randomUUID();
      for (const path of [`/api/threads/${threadId}/timers?state=all`, `/api/threads/${threadId}/autonomy`]) {
        const bobs = await server.request('GET', path, { token: BOB.token });
        const nobody = await server.request('GET', path.replace(threadId, nobodys), { token: BOB.token });
        expect([bobs.status, bobs.body.error.code]).toEqual([404, 'THREAD_NOT_FOUND']);
        expect(bobs.body.error.message.replace(threadId, nobodys)).toBe(nobody.body.error.message);
      }
      const bobsCancel = await server.request('DELETE', `/api/threads/${threadId}/timers/${first}`, { token: BOB.token });
      expect([bobsCancel.status, bobsCancel.body.error.code]).toEqual([404, 'THREAD_NOT_FOUND']);
      expect(await timers().getForUser(ALICE.id, first)).toMatchObject({ state: 'pending' });
    });
  });

  describe('a thread deletion that does not commit', () => {
    /**
     * Until the returned function is called, a transaction that ends with this thread gone
     * fails at its end and rolls back, as a lost connection or a database error would.
     */
    function failDeletionsOf(threadId: string): () => void {
      const context = (server.storage as SqlStorage).context as { transaction: SqlContext['transaction'] };
      const original = context.transaction;
      context.transaction = (work) =>
        original(async (trx) => {
          const result = await work(trx);
          if (!(await trx.selectFrom('threads').select('id').where('id', '=', threadId).executeTakeFirst())) throw new Error('injected: the deletion did not commit');
          return result;
        });
      return () => {
        context.transaction = original;
      };
    }

    it('I11: leaves the thread\'s pending follow-up, bound schedule and webhook and protocol metadata as they were; a retry takes them all; another user changes nothing', async () => {
      const agentId = await newAgent(ALICE.token, { autonomy: slowFollowUps });
      const threadId = await newThread(agentId);
      const timerId = await pendingTimer(threadId);
      const schedule = await server.request('POST', '/api/schedules', { body: { name: 'here', agentId, target: 'thread', threadId, task: 'x', timing: { kind: 'cron', cron: '0 3 * * *' } } });
      expect(schedule.status, JSON.stringify(schedule.body)).toBe(201);
      const hook = await server.request('POST', '/api/hooks', { body: { name: 'push', agentId, threadId, taskTemplate: 'a push' } });
      expect(hook.status, JSON.stringify(hook.body)).toBe(201);
      const protocol = new SqlProtocolStore((server.storage as SqlStorage).context);
      await protocol.setThreadMetadata(ALICE.id, threadId, { source: 'sdk' }, new Date().toISOString());
      const untouched = async () => {
        expect((await server.request('GET', `/api/threads/${threadId}`)).status).toBe(200);
        expect(await timers().getForUser(ALICE.id, timerId)).toMatchObject({ state: 'pending' });
        expect((await server.request('GET', `/api/schedules/${schedule.body.id}`)).status).toBe(200);
        expect((await server.request('GET', `/api/hooks/${hook.body.id}`)).status).toBe(200);
        expect(await protocol.threadMetadata(ALICE.id, threadId)).toEqual({ source: 'sdk' });
      };

      // I12: another user's delete is refused before anything is touched.
      const bobs = await server.request('DELETE', `/api/threads/${threadId}`, { token: BOB.token });
      expect(bobs.status).toBe(404);
      expect(bobs.body.error.code).toBe('THREAD_NOT_FOUND');
      await untouched();

      const restore = failDeletionsOf(threadId);
      try {
        const failed = await server.request('DELETE', `/api/threads/${threadId}`);
        expect(failed.status).toBe(500);
        expect(failed.body.error.code).toBe('INTERNAL');
      } finally {
        restore();
      }
      await untouched();

      expect((await server.request('DELETE', `/api/threads/${threadId}`)).status).toBe(204);
      expect((await server.request('GET', `/api/threads/${threadId}`)).status).toBe(404);
      expect(await timers().getForUser(ALICE.id, timerId)).toBeUndefined();
      expect((await server.request('GET', `/api/schedules/${schedule.body.id}`)).status).toBe(404);
      expect((await server.request('GET', `/api/hooks/${hook.body.id}`)).status).toBe(404);
      expect(await protocol.threadMetadata(ALICE.id, threadId)).toEqual({});
    });
  });

  describe('POST /api/schedules/preview', () => {
    it('lists the next fire times of a cron in its time zone, creating nothing', async () => {
      const before = (await server.request('GET', '/api/schedules')).body.schedules.length;
      const response = await server.request('POST', '/api/schedules/preview', { body: { timing: { kind: 'cron', cron: '30 9 * * *', timezone: 'Asia/Tokyo' } } });
      expect(response.status).toBe(200);
      expect(response.body.fires).toHaveLength(5);
      for (const fire of response.body.fires as string[]) expect(new Date(fire).getUTCHours() * 60 + new Date(fire).getUTCMinutes()).toBe(30); // 09:30 JST = 00:30 UTC
      const times = (response.body.fires as string[]).map((fire) => Date.parse(fire));
      expect(times.every((time, index) => index === 0 || time - times[index - 1]! === 86_400_000)).toBe(true);
      expect((await server.request('GET', '/api/schedules')).body.schedules.length).toBe(before);
    });

    it('I11: a bad cron, a bad time zone or an unknown field answers 400 VALIDATION_FAILED naming the field', async () => {
      const badCron = await server.request('POST', '/api/schedules/preview', { body: { timing: { kind: 'cron', cron: 'every day' } } });
      expect(badCron.status).toBe(400);
      expect(badCron.body.error.code).toBe('VALIDATION_FAILED');
      expect(badCron.body.error.details.map((detail: Json) => detail.path)).toContain('/timing/cron');
      const badZone = await server.request('POST', '/api/schedules/preview', { body: { timing: { kind: 'cron', cron: '0 * * * *', timezone: 'Mars/Olympus' } } });
      expect(badZone.status).toBe(400);
      const extra = await server.request('POST', '/api/schedules/preview', { body: { timing: { kind: 'cron', cron: '0 * * * *' }, name: 'x' } });
      expect(extra.status).toBe(400);
    });

    it('I12: the preview reads no one\'s data, so it answers every signed-in user the same, and no one without a token', async () => {
      const body = { timing: { kind: 'cron', cron: '0 0 1 1 *', timezone: 'UTC' } };
      const alice = await server.request('POST', '/api/schedules/preview', { body });
      const bob = await server.request('POST', '/api/schedules/preview', { token: BOB.token, body });
      expect(bob.body).toEqual(alice.body);
      const anonymous = await server.request('POST', '/api/schedules/preview', { token: '', body });
      expect(anonymous.status).toBe(401);
    });
  });
}
