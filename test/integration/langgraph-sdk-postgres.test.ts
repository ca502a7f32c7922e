import { randomUUID } from 'node:crypto';
import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describePostgres, postgresTarget, randomSchemaName } from '../helpers/postgres.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { ALICE, BOB, startTestServer, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';
import { GatedModel, collect, langgraphSdkSuite } from './langgraph-sdk.suite.js';
import { APPROVAL_RESUME_QUEUE } from '../../src/app/approvals/approval-service.js';
import { LOCK_NAMESPACE } from '../../src/adapters/locks/postgres-thread-locks.js';
import pg from 'pg';
import type { SqlStorage } from '../../src/adapters/sql/sql-storage.js';

type Json = Record<string, any>;

const postgres = await postgresTarget();

describePostgres('LangGraph SDK against vigil on PostgreSQL', postgres, () => {
  langgraphSdkSuite(() => ({ kind: 'postgres', url: postgres.url }));
});

const modes = ['values', 'messages-tuple', 'custom'] as const;

/** Starts a held run and reads its stream on `client` up to the reply's first token, then drops the stream. */
async function readToFirstToken(client: Client, content: string) {
  const thread = await client.threads.create();
  const run = await client.runs.create(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content }] } });
  await waitFor(() => GatedModel.held.length > 0, 10_000, 'the run to reach the model');
  const controller = new AbortController();
  const firstPart: Array<{ event: string; id?: string }> = [];
  for await (const part of client.runs.joinStream(thread.thread_id, run.run_id, { streamMode: [...modes], signal: controller.signal })) {
    firstPart.push(part);
    if (part.event === 'messages') {
      controller.abort();
      break;
    }
  }
  return { thread, run, firstPart };
}

describePostgres('LangGraph protocol across two instances on one PostgreSQL database', postgres, () => {
  let first: TestServer;
  let second: TestServer;

  beforeAll(async () => {
    const place = { dataDir: await makeTempDir(), schema: randomSchemaName() };
    first = await startTestServer({ kind: 'postgres', url: postgres.url }, { models: () => new GatedModel({}), place, langgraph: { heartbeatMs: 50 } });
    second = await startTestServer({ kind: 'postgres', url: postgres.url }, { models: () => new GatedModel({}), place, langgraph: { heartbeatMs: 50 } });
  });
  afterAll(async () => {
    for (const release of GatedModel.held.splice(0)) release();
    await second?.close();
    await first?.destroy();
  });

  it('I15: a run in progress on one instance is joined on the other: its stream, resumed there with the Last-Event-ID the first gave, and its join', async () => {
    const [onFirst, onSecond] = [first, second].map((server) => new Client({ apiUrl: server.url, apiKey: ALICE.token, callerOptions: { maxRetries: 0 } }));
    // Read the running instance's stream up to the reply's first token, then drop it…
    const { thread, run, firstPart } = await readToFirstToken(onFirst!, 'across [hold]');
    // …and go on from the other instance, as a client behind a load balancer would.
    const lastEventId = firstPart.at(-1)!.id!;
    const resumed = collect(onSecond!.runs.joinStream(thread.thread_id, run.run_id, { streamMode: [...modes], lastEventId }));
    const joined = onSecond!.runs.join(thread.thread_id, run.run_id);
    await waitFor(() => GatedModel.held.length > 0, 10_000, 'the held model call');
    GatedModel.held.shift()!();
    const rest = await resumed;
    expect(rest.every((event) => Number(event.id) > Number(lastEventId))).toBe(true);
    const replyText = rest.filter((event) => event.event === 'messages').map((event) => (event.data as Json[])[0]!.content).join('');
    expect(replyText).toBe(' across [hold]'); // the reply after its first word, 'Echo:'
    expect(((await joined) as Json).messages.map((message: Json) => message.content)).toEqual(['across [hold]', 'Echo: across [hold]']);
    // Numbered as the running instance numbered them: nothing lost, nothing repeated.
    const whole = await collect(onFirst!.runs.joinStream(thread.thread_id, run.run_id, { streamMode: [...modes] }));
    expect([...firstPart, ...rest].map((event) => event.id)).toEqual(whole.map((event) => event.id));
    expect([...firstPart, ...rest].map((event) => event.event)).toEqual(whole.map((event) => event.event));
  });

  it('I15: a stream resumed on the other instance after the run ended there still gets the rest of the reply, numbered on from the Last-Event-ID', async () => {
    const [onFirst, onSecond] = [first, second].map((server) => new Client({ apiUrl: server.url, apiKey: ALICE.token, callerOptions: { maxRetries: 0 } }));
    const { thread, run, firstPart } = await readToFirstToken(onFirst!, 'late [hold]');
    // The client is away while the run ends, then comes back through the other instance.
    GatedModel.held.shift()!();
    await onFirst!.runs.join(thread.thread_id, run.run_id);
    const lastEventId = firstPart.at(-1)!.id!;
    const rest = await collect(onSecond!.runs.joinStream(thread.thread_id, run.run_id, { streamMode: [...modes], lastEventId }));
    const replyText = rest.filter((event) => event.event === 'messages').map((event) => (event.data as Json[])[0]!.content).join('');
    expect(replyText).toBe(' late [hold]');
    const whole = await collect(onFirst!.runs.joinStream(thread.thread_id, run.run_id, { streamMode: [...modes] }));
    expect([...firstPart, ...rest].map((event) => event.id)).toEqual(whole.map((event) => event.id));
    expect([...firstPart, ...rest].map((event) => event.event)).toEqual(whole.map((event) => event.event));
    // Another user resuming it learns nothing (I12).
    const bob = new Client({ apiUrl: second.url, apiKey: BOB.token, callerOptions: { maxRetries: 0 } });
    await expect(collect(bob.runs.joinStream(thread.thread_id, run.run_id, { streamMode: [...modes], lastEventId }))).rejects.toThrow(/404/);
  });

  it('I8: a cancel that reaches an instance before the run it names is requested there cancels it when it is (it was lost); another user\'s does nothing (I12)', async () => {
    const conversations = first.services.conversations;
    const thread = await conversations.createThread(ALICE.id, {});
    const [early, bobs] = [randomUUID(), randomUUID()];
    const heard = (runId: string) => waitFor(() => first.logs.some((line) => line.runId === runId && line.msg === 'a cancel came before its run; kept for when it is requested'), 10_000, 'the first instance to hear the cancel');
    await second.services.conversations.cancelAnywhere(ALICE.id, early);
    await heard(early);
    const refused = await conversations.sendMessage(ALICE.id, thread.id, 'never sent', { runId: early }).then(
      (outcome) => outcome.run.status,
      (error: { code?: string }) => error.code,
    );
    expect(['cancelled', 'RUN_CANCELLED']).toContain(refused);
    await second.services.conversations.cancelAnywhere(BOB.id, bobs);
    await heard(bobs);
    expect((await conversations.sendMessage(ALICE.id, thread.id, 'sent', { runId: bobs })).run.status).toBe('succeeded');
    const contents = (await conversations.history(ALICE.id, thread.id, { includeInternal: false, limit: 50 })).messages.map((message) => message.content);
    expect(contents).toEqual(['sent', 'Echo: sent']);
  });

  it('a cancel sent to the instance that does not run the run stops it there: vigil\'s API, and the protocol\'s with wait; another user\'s cancel does nothing (I12)', async () => {
    const [onFirst, onSecond] = [first, second].map((server) => new Client({ apiUrl: server.url, apiKey: ALICE.token, callerOptions: { maxRetries: 0 } }));
    // vigil's own route: the run is on the first instance, the cancel goes to the second.
    const thread = await onFirst!.threads.create();
    const held = await onFirst!.runs.create(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content: 'stop me [hold]' }] } });
    await waitFor(() => GatedModel.held.length > 0, 10_000, 'the run to reach the model');
    expect((await second.request('POST', `/api/runs/${held.run_id}/cancel`, { token: BOB.token })).status).toBe(404);
    expect((await onFirst!.runs.get(thread.thread_id, held.run_id)).status).toBe('running');
    expect((await second.request('POST', `/api/runs/${held.run_id}/cancel`)).status).toBe(202);
    await waitFor(async () => (await onFirst!.runs.get(thread.thread_id, held.run_id)).status === 'interrupted', 10_000, 'the run to be cancelled');
    GatedModel.held.splice(0);
    await waitFor(async () => (await onFirst!.threads.get(thread.thread_id)).status === 'idle', 10_000, 'the thread to be idle again');
    // The protocol's cancel with wait: answered once the run has ended on the first instance.
    const again = await onFirst!.runs.create(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content: 'and me [hold]' }] } });
    await waitFor(() => GatedModel.held.length > 0, 10_000, 'the second run to reach the model');
    await onSecond!.runs.cancel(thread.thread_id, again.run_id, true);
    expect((await onSecond!.runs.get(thread.thread_id, again.run_id)).status).toBe('interrupted');
    GatedModel.held.splice(0);
  });

  it('I8: a run queued on one instance (enqueue) and cancelled through the other never starts: the cancel with wait answers while the other run still holds the thread, and its message is not added', async () => {
    const [onFirst, onSecond] = [first, second].map((server) => new Client({ apiUrl: server.url, apiKey: ALICE.token, callerOptions: { maxRetries: 0 } }));
    const thread = await onFirst!.threads.create();
    const held = await onFirst!.runs.create(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content: 'busy [hold]' }] } });
    await waitFor(() => GatedModel.held.length > 0, 10_000, 'the run to reach the model');
    const queued = await onFirst!.runs.create(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content: 'never mind' }] }, multitaskStrategy: 'enqueue' });
    expect((await onSecond!.runs.get(thread.thread_id, queued.run_id)).status).toBe('pending');
    // Another user cannot call it off (I12).
    expect((await second.request('POST', `/threads/${thread.thread_id}/runs/${queued.run_id}/cancel`, { token: BOB.token })).status).toBe(404);
    // A client following it through the other instance hears why it ended.
    const followed = collect(onSecond!.runs.joinStream(thread.thread_id, queued.run_id, { streamMode: ['values'] }));
    // Answered while the held run still holds the thread: the queued run stopped waiting.
    await onSecond!.runs.cancel(thread.thread_id, queued.run_id, true);
    expect((await followed).at(-1)).toMatchObject({ event: 'error', data: { error: 'RUN_CANCELLED' } });
    expect((await onSecond!.runs.get(thread.thread_id, queued.run_id)).status).toBe('interrupted');
    expect((await onFirst!.runs.get(thread.thread_id, held.run_id)).status).toBe('running');
    GatedModel.held.shift()!();
    await onFirst!.runs.join(thread.thread_id, held.run_id);
    const state = await onFirst!.threads.getState(thread.thread_id);
    expect((state.values as Json).messages.map((message: Json) => message.content)).toEqual(['busy [hold]', 'Echo: busy [hold]']);
    expect((await onFirst!.threads.get(thread.thread_id)).status).toBe('idle');
  });

  it('I16: a resume waiting on one instance for its run, cancelled through the other, is refused there too (409 RUN_NOT_CANCELLABLE): the decisions stand and the run ends as success on both; another user 404', async () => {
    const [onFirst, onSecond] = [first, second].map((server) => new Client({ apiUrl: server.url, apiKey: ALICE.token, callerOptions: { maxRetries: 0 } }));
    const assistant = await onFirst!.assistants.create({ graphId: 'chat', name: 'Careful on two' });
    await first.services.agents.updateSetting(ALICE.id, assistant.assistant_id, 'tools', { approval: { memory_write: { attended: 'ask' } } });
    const thread = await onFirst!.threads.create();
    await onFirst!.runs.wait(thread.thread_id, assistant.assistant_id, { input: { messages: [{ type: 'human', content: 'note [remember:likes pears]' }] } });
    // The resume job comes 1.5 s after the decisions, whichever instance's queue delivers it.
    const restores = [first, second].map((server) => {
      const jobs = server.services.jobs;
      const schedule = jobs.schedule;
      jobs.schedule = async (job, options) => schedule.call(jobs, job.queue === APPROVAL_RESUME_QUEUE ? { ...job, dueAt: new Date(job.dueAt.getTime() + 1_500) } : job, options);
      return () => (jobs.schedule = schedule);
    });
    let runId: string;
    try {
      runId = (await onFirst!.runs.create(thread.thread_id, assistant.assistant_id, { command: { resume: { decisions: [{ type: 'approve' }] } } })).run_id;
      await waitFor(async () => ((await first.request('GET', `/api/approvals?threadId=${thread.thread_id}`)).body.approvals as Json[]).every((approval) => approval.status === 'approved'), 10_000, 'the decision recorded');
      expect((await second.request('POST', `/threads/${thread.thread_id}/runs/${runId}/cancel`, { token: BOB.token })).status).toBe(404);
      const refused = await second.request('POST', `/threads/${thread.thread_id}/runs/${runId}/cancel`);
      expect(refused.status, JSON.stringify(refused.body)).toBe(409);
      expect(refused.body.error.code).toBe('RUN_NOT_CANCELLABLE');
    } finally {
      for (const restore of restores) restore();
    }
    const joined = (await onSecond!.runs.join(thread.thread_id, runId)) as Json;
    expect(joined.messages.at(-1)).toMatchObject({ type: 'ai', content: expect.stringContaining('Done:') });
    await waitFor(async () => (await onFirst!.runs.get(thread.thread_id, runId)).status === 'success', 10_000, 'the resume to end');
    expect((await onSecond!.runs.get(thread.thread_id, runId)).status).toBe('success');
    expect((await first.services.memories.list(ALICE.id, assistant.assistant_id, 10)).map((memory) => memory.content)).toEqual(['likes pears']);
  });

  it('multitask across instances: the thread shows busy there, reject sees the run the other instance runs (409), interrupt cancels it there and answers (I8)', async () => {
    const [onFirst, onSecond] = [first, second].map((server) => new Client({ apiUrl: server.url, apiKey: ALICE.token, callerOptions: { maxRetries: 0 } }));
    const thread = await onFirst!.threads.create();
    const held = await onFirst!.runs.create(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content: 'first [hold]' }] } });
    await waitFor(() => GatedModel.held.length > 0, 10_000, 'the run to reach the model');
    expect((await onSecond!.threads.get(thread.thread_id)).status).toBe('busy');
    expect((await onSecond!.threads.search({ status: 'busy', limit: 100 })).map((found) => found.thread_id)).toContain(thread.thread_id);
    const rejected = await second.request('POST', `/threads/${thread.thread_id}/runs`, { body: { assistant_id: 'agent', input: { messages: [{ type: 'human', content: 'second' }] } } });
    expect(rejected.status).toBe(409);
    expect(rejected.body.error.code).toBe('THREAD_BUSY');
    const interrupting = (await onSecond!.runs.wait(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content: 'third' }] }, multitaskStrategy: 'interrupt' })) as Json;
    expect(interrupting.messages.at(-1).content).toBe('Echo: third');
    expect((await onFirst!.runs.get(thread.thread_id, held.run_id)).status).toBe('interrupted');
    GatedModel.held.splice(0);
  });
});

describePostgres('LangGraph protocol: a thread deleted through one instance while a run waits for it on the other', postgres, () => {
  let first: TestServer;
  let second: TestServer;
  let admin: pg.Client;
  const place = { dataDir: '', schema: randomSchemaName() };

  beforeAll(async () => {
    place.dataDir = await makeTempDir();
    first = await startTestServer({ kind: 'postgres', url: postgres.url }, { models: () => new GatedModel({}), place, langgraph: { heartbeatMs: 50 } });
    second = await startTestServer({ kind: 'postgres', url: postgres.url }, { models: () => new GatedModel({}), place, langgraph: { heartbeatMs: 50 } });
    admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.end();
    await second?.close();
    await first?.destroy();
  });

  it("I11: a run waiting for its thread on one instance while the thread is deleted through the other ends THREAD_NOT_FOUND, not RUN_NOT_STARTED ('its server stopped'); nothing of it is added", async () => {
    const onFirst = new Client({ apiUrl: first.url, apiKey: ALICE.token, callerOptions: { maxRetries: 0 } });
    const thread = await onFirst.threads.create();
    const key = [LOCK_NAMESPACE, `${place.schema}:${thread.thread_id}`] as const;
    // Sessions waiting for the thread's lock (pg_locks keeps an advisory lock's second key as an oid).
    const waiting = async () =>
      Number((await admin.query<{ n: string }>("SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = $1 AND objid = (hashtext($2)::bigint & 4294967295)::oid", [...key])).rows[0]!.n);
    // The thread is held (as by a run on a third instance): first the deletion queues for it
    // (through the second instance), then a person's run (through the first).
    await admin.query('SELECT pg_advisory_lock($1, hashtext($2))', [...key]);
    let released = false;
    try {
      const deleted = second.request('DELETE', `/threads/${thread.thread_id}`);
      await waitFor(async () => (await waiting()) === 1, 10_000, 'the deletion to wait for the thread');
      const run = await onFirst.runs.create(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content: 'too late' }] } });
      const streamed = collect(onFirst.runs.joinStream(thread.thread_id, run.run_id, { streamMode: ['values'] }));
      await waitFor(async () => (await waiting()) === 2, 10_000, 'the run to wait for the thread behind the deletion');
      await admin.query('SELECT pg_advisory_unlock($1, hashtext($2))', [...key]);
      released = true;
      expect((await deleted).status).toBe(204);
      expect((await streamed).at(-1)).toMatchObject({ event: 'error', data: { error: 'THREAD_NOT_FOUND' } });
      expect(await first.services.conversations.getRun(ALICE.id, run.run_id).catch((error: { code?: string }) => error.code)).toBe('RUN_NOT_FOUND');
    } finally {
      if (!released) await admin.query('SELECT pg_advisory_unlock($1, hashtext($2))', [...key]);
    }
  });
});

describePostgres('LangGraph protocol: a run claimed by a live instance that another takes for gone', postgres, () => {
  const instanceId = `claim-${randomUUID().slice(0, 8)}`;
  let first: TestServer;
  let second: TestServer;
  let admin: pg.Client;

  beforeAll(async () => {
    const place = { dataDir: await makeTempDir(), schema: randomSchemaName() };
    first = await startTestServer({ kind: 'postgres', url: postgres.url }, { models: () => new GatedModel({}), place, environment: { VIGIL_INSTANCE_ID: instanceId } });
    second = await startTestServer({ kind: 'postgres', url: postgres.url }, { models: () => new GatedModel({}), place });
    admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.end();
    await second?.close();
    await first?.destroy();
  });

  it("a run its instance has claimed (it holds the thread) is not ended RUN_NOT_STARTED by another instance while the first's presence connection is away; it runs, and says so", async () => {
    const [onFirst, onSecond] = [first, second].map((server) => new Client({ apiUrl: server.url, apiKey: ALICE.token, callerOptions: { maxRetries: 0 } })) as [Client, Client];
    const thread = await onFirst.threads.create();
    // The first instance stops right after its claim (pending → claimed), before its run is recorded.
    let claimed!: () => void;
    const atClaim = new Promise<void>((resolve) => (claimed = resolve));
    let goOn!: () => void;
    const gate = new Promise<void>((resolve) => (goOn = resolve));
    const executor = (first.storage as SqlStorage).context.db.getExecutor();
    const execute = executor.executeQuery.bind(executor);
    executor.executeQuery = (async (query: Parameters<typeof execute>[0], ...rest: unknown[]) => {
      const result = await (execute as (...args: unknown[]) => Promise<unknown>)(query, ...rest);
      if (query.sql.startsWith('update "protocol_runs"') && query.parameters[0] === 'claimed') {
        claimed();
        await gate;
      }
      return result;
    }) as typeof executor.executeQuery;
    try {
      const run = await onFirst.runs.create(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content: 'claimed' }] } });
      await atClaim;
      // Its presence connection breaks (the process lives on): another instance may take it for gone.
      const presence = async () => (await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [`vigil-presence ${instanceId}`])).rows;
      const [session] = await presence();
      await admin.query('SELECT pg_terminate_backend($1)', [session!.pid]);
      await waitFor(async () => (await presence()).length === 0, 10_000, "the first instance's presence session to end");
      const seen = await onSecond.runs.get(thread.thread_id, run.run_id);
      // Asked while the first instance was away (its presence comes back a second later), or the case proves nothing.
      expect(await presence()).toEqual([]);
      expect(seen.status).toBe('pending');
      goOn();
      await onFirst.runs.join(thread.thread_id, run.run_id);
      expect((await onSecond.runs.get(thread.thread_id, run.run_id)).status).toBe('success');
      const state = await onSecond.threads.getState(thread.thread_id);
      expect((state.values as Json).messages.map((message: Json) => message.content)).toEqual(['claimed', 'Echo: claimed']);
    } finally {
      goOn();
      executor.executeQuery = execute;
    }
  });
});
