import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { PREEMPTED_REASON } from '../../src/app/run-coordinator.js';
import { FakeModelLog, tagged } from '../helpers/autonomy-fake-model.js';
import { describePostgres, postgresTarget, randomSchemaName } from '../helpers/postgres.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';
import { ALICE, startTestServer, type TestServer } from '../helpers/test-server.js';
import { autonomySuite } from './autonomy.suite.js';

const postgres = await postgresTarget();

describePostgres('autonomy on PostgreSQL (pg-boss, advisory locks)', postgres, () => {
  // pg-boss polls for due jobs every half second.
  autonomySuite(() => ({ kind: 'postgres', url: postgres.url }), { slackMs: 1_000 });
});

describePostgres('autonomy across two instances on one PostgreSQL database', postgres, () => {
  const log = new FakeModelLog();
  let first: TestServer;
  let second: TestServer;

  beforeAll(async () => {
    const place = { dataDir: await makeTempDir(), schema: randomSchemaName() };
    first = await startTestServer({ kind: 'postgres', url: postgres.url }, { models: log.resolver(), place });
    second = await startTestServer({ kind: 'postgres', url: postgres.url }, { models: log.resolver(), place });
  });
  afterAll(async () => {
    await second?.close();
    await first?.destroy();
  });

  async function subscribe(server: TestServer, threadId: string): Promise<Array<Record<string, any>>> {
    const socket = new WebSocket(`${server.url.replace('http', 'ws')}/api/ws?token=${ALICE.token}`);
    await new Promise((resolve) => socket.once('open', resolve));
    const events: Array<Record<string, any>> = [];
    socket.on('message', (data) => events.push(JSON.parse(String(data))));
    socket.send(JSON.stringify({ type: 'thread.subscribe', threadId }));
    await waitFor(() => events.some((event) => event.type === 'thread.subscribed'));
    return events;
  }

  it('I8: a person\'s message on one instance pre-empts the autonomous run on the other (abort, then answer)', async () => {
    const tag = 'two-instances';
    log.behaviour = (call) => (call.synthetic ? { tokenDelayMs: 50, reply: Array.from({ length: 60 }, (_, index) => `w${index}`).join(' ') } : {});
    const agentId = `a-${randomUUID().slice(0, 8)}`;
    const policy = { enabled: true, delaysMs: { check_in: 100, question_unanswered: 100, task_incomplete: 100, waiting_for_decision: 100 }, minDelayMs: 10, maxPerSilence: 1 };
    expect((await first.request('POST', '/api/agents', { body: { id: agentId, name: tag, systemPrompt: tagged(tag), autonomy: policy } })).status).toBe(201);
    const threadId = (await first.request('POST', '/api/threads', { body: { agentId } })).body.id as string;
    const seen = [await subscribe(first, threadId), await subscribe(second, threadId)];
    await first.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'Hello' } });
    // Whichever instance took the follow-up: wait until its reply is streaming there.
    const start = Date.now();
    let runner = -1;
    while (runner < 0) {
      runner = seen.findIndex((events) => events.some((event) => event.type === 'run.start' && event.trigger === 'autonomy') && events.some((event) => event.type === 'message.delta'));
      if (Date.now() - start > 20_000) throw new Error('no follow-up started');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const autonomyRunId = seen[runner]!.find((event) => event.type === 'run.start' && event.trigger === 'autonomy')!.runId as string;
    const other = runner === 0 ? second : first;
    const answer = await other.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'Stop, I am here' } });
    log.behaviour = () => ({});
    expect(answer.body.run).toMatchObject({ status: 'succeeded', trigger: 'user' });
    const runs = (await first.request('GET', `/api/threads/${threadId}/runs`)).body.runs as Array<Record<string, any>>;
    const autonomyRun = runs.find((run) => run.id === autonomyRunId)!;
    expect(autonomyRun).toMatchObject({ status: 'cancelled', reason: PREEMPTED_REASON });
    // Never interleaved: the person's run started after the autonomous one ended.
    expect(Date.parse(answer.body.run.startedAt)).toBeGreaterThanOrEqual(Date.parse(autonomyRun.endedAt));
    const history = (await other.request('GET', `/api/threads/${threadId}/history`)).body.messages as Array<Record<string, any>>;
    expect(history.slice(0, 4).map((message) => message.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(history.some((message) => message.runId === autonomyRunId)).toBe(false);
  });
});
