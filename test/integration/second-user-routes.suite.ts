import { randomUUID } from 'node:crypto';
import { HumanMessage } from '@langchain/core/messages';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALICE, BOB, startTestServer, type Backend, type TestServer } from '../helpers/test-server.js';
import { openEventStream } from '../helpers/event-stream.js';
import { openSocket } from '../helpers/thread-socket.js';
import { waitFor } from '../helpers/wait-for.js';
import { GatedModel } from './langgraph-sdk.suite.js';

type Json = Record<string, any>;

/**
 * I12, route by route: the second-user case of each route no other suite covered (an audit
 * of every HTTP route and WebSocket request), and every DELETE and PATCH-like route checked
 * the same way in one place. Alice owns something; Bob names it in a request and is refused
 * the way an id nobody has is refused (same status, same code, the same message but for the
 * id), and nothing of Alice's changes. Bob is never shown what is Alice's, also where both
 * have an agent of the same id (every user has `default`: agent ids are per user) or where
 * Bob's thread has the id Alice's deleted thread had (thread ids are one namespace).
 */
export function secondUserRoutesSuite(backend: () => Backend): void {
  let server: TestServer;

  beforeAll(async () => {
    // Private addresses allowed: an outbound webhook to a port nobody listens on (it never fires here).
    server = await startTestServer(backend(), { models: () => new GatedModel({}), environment: { VIGIL_OUTBOUND_WEBHOOKS_ALLOW_PRIVATE: 'true' } });
  });
  afterAll(async () => {
    for (const release of GatedModel.held.splice(0)) release();
    await server?.destroy();
  });

  const request = (method: string, path: string, token: string, body?: unknown) => server.request(method, path, { token, ...(body !== undefined ? { body } : {}) });
  const asAlice = (method: string, path: string, body?: unknown) => request(method, path, ALICE.token, body);
  const asBob = (method: string, path: string, body?: unknown) => request(method, path, BOB.token, body);

  /**
   * Bob's request naming Alice's `id` (in the path, the body or both) is answered exactly as
   * the same request naming an id nobody has: 404 with `code`, and a message that differs
   * only by the id. Nothing tells Bob that Alice's exists.
   */
  async function unseen(method: string, path: string, id: string, code: string, body?: Json): Promise<void> {
    const nobodys = randomUUID();
    const swap = (text: string) => text.split(id).join(nobodys);
    const theirs = await asBob(method, path, body);
    const nobody = await asBob(method, swap(path), body === undefined ? undefined : JSON.parse(swap(JSON.stringify(body))));
    expect([theirs.status, theirs.body?.error?.code], `${method} ${path}: ${theirs.text}`).toEqual([404, code]);
    expect(swap(JSON.stringify(theirs.body)), `${method} ${path}`).toBe(JSON.stringify(nobody.body));
  }

  async function newAgent(token = ALICE.token, extra: Json = {}): Promise<string> {
    const id = `su-${randomUUID().slice(0, 8)}`;
    const created = await request('POST', '/api/agents', token, { id, name: `Private ${id}`, ...extra });
    expect(created.status, created.text).toBe(201);
    return id;
  }

  async function newThread(agentId?: string, token = ALICE.token): Promise<string> {
    const created = await request('POST', '/api/threads', token, agentId ? { agentId } : {});
    expect(created.status, created.text).toBe(201);
    return created.body.id as string;
  }

  const threadIds = async (token: string) => ((await request('GET', '/api/threads?limit=100', token)).body.threads as Json[]).map((thread) => thread.id as string);
  const scheduleIds = async (token: string) => ((await request('GET', '/api/schedules', token)).body.schedules as Json[]).map((schedule) => schedule.id as string);
  const memoryContents = async (agentId: string, token = ALICE.token) => ((await request('GET', `/api/agents/${agentId}/memories?limit=100`, token)).body.memories as Json[]).map((memory) => memory.content as string);

  describe('I12: /api agents, their memories, settings and outbound webhooks', () => {
    it('I12: another user does not list the agent, cannot add to or search its memories, replace its context settings or start a thread on it', async () => {
      const agentId = await newAgent(ALICE.token, { context: { maxTokens: 6000 } });
      expect((await asAlice('POST', `/api/agents/${agentId}/memories`, { content: 'the spare key is under the blue pot' })).status).toBe(201);
      await newThread(undefined, BOB.token); // Bob exists, with his default agent

      expect(((await asBob('GET', '/api/agents')).body.agents as Json[]).map((agent) => agent.id)).not.toContain(agentId);
      expect(((await asAlice('GET', '/api/agents')).body.agents as Json[]).map((agent) => agent.id)).toContain(agentId);

      await unseen('POST', `/api/agents/${agentId}/memories`, agentId, 'AGENT_NOT_FOUND', { content: 'planted by bob' });
      await unseen('GET', `/api/agents/${agentId}/memories?q=spare%20key`, agentId, 'AGENT_NOT_FOUND');
      await unseen('PUT', `/api/agents/${agentId}/context`, agentId, 'AGENT_NOT_FOUND', { maxTokens: 9000 });
      const bobsThreads = await threadIds(BOB.token);
      await unseen('POST', '/api/threads', agentId, 'AGENT_NOT_FOUND', { agentId });

      // Nothing changed: Alice's memories, her settings; Bob has no thread more.
      expect(await memoryContents(agentId)).toEqual(['the spare key is under the blue pot']);
      expect((await asAlice('GET', `/api/agents/${agentId}/context`)).body).toMatchObject({ maxTokens: 6000 });
      expect(await threadIds(BOB.token)).toEqual(bobsThreads);
    });

    it("I12: another user cannot list or delete the agent's outbound webhooks, nor reach one through an agent of his own", async () => {
      const agentId = await newAgent();
      const created = await asAlice('POST', `/api/agents/${agentId}/webhooks`, { url: 'http://127.0.0.1:9/alice', events: ['approval.expired'] });
      expect(created.status, created.text).toBe(201);
      const webhookId = created.body.id as string;
      const bobsAgent = await newAgent(BOB.token);

      await unseen('GET', `/api/agents/${agentId}/webhooks`, agentId, 'AGENT_NOT_FOUND');
      // Alice's agent and her webhook, or Bob's agent and her webhook: neither is Bob's.
      await unseen('DELETE', `/api/agents/${agentId}/webhooks/${webhookId}`, webhookId, 'OUTBOUND_WEBHOOK_NOT_FOUND');
      await unseen('DELETE', `/api/agents/${bobsAgent}/webhooks/${webhookId}`, webhookId, 'OUTBOUND_WEBHOOK_NOT_FOUND');
      await unseen('GET', `/api/agents/${bobsAgent}/webhooks/${webhookId}/deliveries`, webhookId, 'OUTBOUND_WEBHOOK_NOT_FOUND');
      expect((await asBob('GET', `/api/agents/${bobsAgent}/webhooks`)).body.webhooks).toEqual([]);

      expect(((await asAlice('GET', `/api/agents/${agentId}/webhooks`)).body.webhooks as Json[]).map((webhook) => webhook.id)).toEqual([webhookId]);
    });
  });

  describe("I12: another user's changes and deletions change nothing", () => {
    /** One of everything of Alice's that a route can change or delete, by its id. */
    async function alicesThings() {
      const agentId = await newAgent();
      const threadId = (await asAlice('POST', '/threads', { metadata: { mood: 'calm' } })).body.thread_id as string;
      const memory = await asAlice('POST', `/api/agents/${agentId}/memories`, { content: 'alice keeps her passport in the drawer' });
      const key = randomUUID();
      expect((await asAlice('PUT', '/store/items', { namespace: ['memories', agentId], key, value: { content: 'alice likes figs' } })).status).toBe(204);
      const hook = await asAlice('POST', '/api/hooks', { name: 'alice hook', agentId, taskTemplate: 'a push' });
      const schedule = await asAlice('POST', '/api/schedules', { name: 'alice brief', agentId, task: 'brief me', timing: { kind: 'cron', cron: '0 5 * * *' } });
      const cron = await asAlice('POST', '/runs/crons', { assistant_id: agentId, schedule: '0 6 * * *', input: { messages: [{ type: 'human', content: 'alice cron' }] } });
      const webhook = await asAlice('POST', `/api/agents/${agentId}/webhooks`, { url: 'http://127.0.0.1:9/alice-things', events: ['approval.expired'] });
      for (const made of [memory, hook, schedule, cron, webhook]) expect(made.status, made.text).toBeLessThan(300);
      return { agentId, threadId, memoryId: memory.body.id as string, key, hookId: hook.body.id as string, scheduleId: schedule.body.id as string, cronId: cron.body.cron_id as string, webhookId: webhook.body.id as string };
    }

    it("I12: each DELETE naming another user's resource answers as for an id nobody has, and the resource is still there", async () => {
      const alice = await alicesThings();
      await unseen('DELETE', `/api/memories/${alice.memoryId}`, alice.memoryId, 'MEMORY_NOT_FOUND');
      await unseen('DELETE', '/store/items', alice.agentId, 'AGENT_NOT_FOUND', { namespace: ['memories', alice.agentId], key: alice.key });
      await unseen('DELETE', `/api/hooks/${alice.hookId}`, alice.hookId, 'HOOK_NOT_FOUND');
      await unseen('DELETE', `/api/schedules/${alice.scheduleId}`, alice.scheduleId, 'SCHEDULE_NOT_FOUND');
      await unseen('DELETE', `/runs/crons/${alice.cronId}`, alice.cronId, 'SCHEDULE_NOT_FOUND');
      await unseen('DELETE', `/api/agents/${alice.agentId}/webhooks/${alice.webhookId}`, alice.webhookId, 'OUTBOUND_WEBHOOK_NOT_FOUND');
      await unseen('DELETE', `/threads/${alice.threadId}`, alice.threadId, 'THREAD_NOT_FOUND');
      await unseen('DELETE', `/api/threads/${alice.threadId}`, alice.threadId, 'THREAD_NOT_FOUND');
      await unseen('DELETE', `/assistants/${alice.agentId}`, alice.agentId, 'AGENT_NOT_FOUND');
      await unseen('DELETE', `/api/agents/${alice.agentId}`, alice.agentId, 'AGENT_NOT_FOUND');

      expect(await memoryContents(alice.agentId)).toEqual(expect.arrayContaining(['alice keeps her passport in the drawer', 'alice likes figs']));
      for (const path of [`/api/hooks/${alice.hookId}`, `/api/schedules/${alice.scheduleId}`, `/api/schedules/${alice.cronId}`, `/threads/${alice.threadId}`, `/assistants/${alice.agentId}`]) {
        expect((await asAlice('GET', path)).status, path).toBe(200);
      }
      expect(((await asAlice('GET', `/api/agents/${alice.agentId}/webhooks`)).body.webhooks as Json[]).map((webhook) => webhook.id)).toEqual([alice.webhookId]);
    });

    it("I12: each PATCH naming another user's resource answers as for an id nobody has, and the resource is as it was", async () => {
      const alice = await alicesThings();
      await unseen('PATCH', `/threads/${alice.threadId}`, alice.threadId, 'THREAD_NOT_FOUND', { metadata: { mood: 'bob was here' } });
      await unseen('PATCH', `/assistants/${alice.agentId}`, alice.agentId, 'AGENT_NOT_FOUND', { name: 'bob was here' });
      await unseen('PATCH', `/runs/crons/${alice.cronId}`, alice.cronId, 'SCHEDULE_NOT_FOUND', { enabled: false });
      await unseen('PATCH', `/api/schedules/${alice.scheduleId}`, alice.scheduleId, 'SCHEDULE_NOT_FOUND', { name: 'bob was here' });
      await unseen('PUT', `/api/agents/${alice.agentId}/planner`, alice.agentId, 'AGENT_NOT_FOUND', {});
      await unseen('PUT', `/api/agents/${alice.agentId}/autonomy`, alice.agentId, 'AGENT_NOT_FOUND', { enabled: true });

      expect((await asAlice('GET', `/threads/${alice.threadId}`)).body.metadata).toMatchObject({ mood: 'calm' });
      expect((await asAlice('GET', `/assistants/${alice.agentId}`)).body.name).toBe(`Private ${alice.agentId}`);
      expect((await asAlice('GET', `/api/schedules/${alice.cronId}`)).body.enabled).toBe(true);
      expect((await asAlice('GET', `/api/schedules/${alice.scheduleId}`)).body.name).toBe('alice brief');
      expect((await asAlice('GET', `/api/agents/${alice.agentId}/autonomy`)).body.policy.enabled).toBe(false);
    });
  });

  describe('I12: an agent id both users have (every user has "default")', () => {
    it("I12: Bob's default agent shows none of Alice's default agent's memories, settings, webhooks or runs", async () => {
      const aliceThread = await newThread(undefined, ALICE.token);
      expect((await asAlice('POST', '/api/agents/default/memories', { content: 'alice hides the spare key under the blue pot' })).status).toBe(201);
      expect((await asAlice('PUT', '/api/agents/default/context', { maxTokens: 7000 })).status).toBe(200);
      expect((await asAlice('PUT', '/api/agents/default/autonomy', { enabled: false, maxPerSilence: 7 })).status).toBe(200);
      expect((await asAlice('POST', '/api/agents/default/webhooks', { url: 'http://127.0.0.1:9/alice-default', events: ['approval.expired'] })).status).toBe(201);
      // A run that counts in the autonomy report (not a person's): a schedule's.
      const input = new HumanMessage({ content: 'the daily report', additional_kwargs: { synthetic: true, trigger_type: 'cron' } });
      const ran = await server.services.conversations.runTriggered(ALICE.id, aliceThread, { trigger: 'cron', input });
      expect(ran.run.status).toBe('succeeded');
      await newThread(undefined, BOB.token);

      // Alice's own answers, so that each of Bob's below could show her data.
      expect(await memoryContents('default', ALICE.token)).toContain('alice hides the spare key under the blue pot');
      expect(((await asAlice('GET', '/api/agents/default/autonomy/report')).body.triggers as Json[]).find((trigger) => trigger.triggerType === 'cron')).toMatchObject({ runs: 1 });

      expect(await memoryContents('default', BOB.token)).toEqual([]);
      expect((await asBob('GET', '/api/agents/default/memories?q=spare%20key%20blue%20pot')).body.memories).toEqual([]);
      const store = await asBob('POST', '/store/items/search', { namespace_prefix: ['memories', 'default'], query: 'spare key' });
      expect([store.status, store.body.items]).toEqual([200, []]);
      expect((await asBob('GET', '/api/agents/default/context')).body.maxTokens).toBeUndefined();
      expect((await asBob('GET', '/api/agents/default/autonomy')).body.policy.maxPerSilence).not.toBe(7);
      expect((await asBob('GET', '/api/agents/default/webhooks')).body.webhooks).toEqual([]);
      expect((await asBob('GET', '/api/agents/default/autonomy/report')).body).toEqual({ agentId: 'default', triggers: [] });
    });
  });

  describe("I12: schedules, webhooks and crons name only the caller's agents and threads", () => {
    it("I12: another user cannot create a schedule, webhook or cron on the agent or the thread, nor list the schedule; nothing is created", async () => {
      const agentId = await newAgent();
      const threadId = await newThread(agentId);
      const schedule = await asAlice('POST', '/api/schedules', { name: 'nightly', agentId, target: 'thread', threadId, task: 'tidy up', timing: { kind: 'cron', cron: '0 3 * * *' } });
      expect(schedule.status, schedule.text).toBe(201);
      await newThread(undefined, BOB.token);
      const bobsSchedules = await scheduleIds(BOB.token);
      const timing = { kind: 'cron', cron: '0 4 * * *' };

      expect(await scheduleIds(BOB.token)).not.toContain(schedule.body.id);
      await unseen('POST', '/api/schedules', agentId, 'AGENT_NOT_FOUND', { name: 'x', agentId, task: 'x', timing });
      await unseen('POST', '/api/schedules', threadId, 'THREAD_NOT_FOUND', { name: 'x', target: 'thread', threadId, task: 'x', timing });
      await unseen('POST', '/api/hooks', agentId, 'AGENT_NOT_FOUND', { name: 'x', agentId, taskTemplate: 'x' });
      const cron = { schedule: '0 4 * * *', input: { messages: [{ type: 'human', content: 'x' }] } };
      await unseen('POST', '/runs/crons', agentId, 'AGENT_NOT_FOUND', { assistant_id: agentId, ...cron });

      expect(await scheduleIds(BOB.token)).toEqual(bobsSchedules);
      expect((await asBob('GET', '/api/hooks')).body.hooks).toEqual([]);
      expect(await scheduleIds(ALICE.token)).toContain(schedule.body.id);
    });
  });

  describe('I12: a run in progress', () => {
    it('I12: another user cannot cancel it (HTTP, WebSocket run.cancel, the LangGraph routes through a thread of his own); it runs to its end', async () => {
      const threadId = await newThread();
      const sending = asAlice('POST', `/api/threads/${threadId}/messages`, { content: 'work [hold]' });
      await waitFor(() => GatedModel.held.length > 0, 10_000, "Alice's run to reach the model");
      const [running] = (await asAlice('GET', `/api/threads/${threadId}/runs`)).body.runs as Json[];
      expect(running).toMatchObject({ status: 'running' });
      const runId = running!.id as string;
      try {
        await unseen('POST', `/api/runs/${runId}/cancel`, runId, 'RUN_NOT_FOUND');
        await unseen('GET', `/api/runs/${runId}`, runId, 'RUN_NOT_FOUND');

        const bob = await openSocket(server, BOB.token);
        bob.send({ type: 'run.cancel', runId });
        await waitFor(() => bob.frames.length > 0, 10_000, "the answer to Bob's run.cancel");
        bob.socket.close();
        expect(bob.frames).toEqual([expect.objectContaining({ type: 'error', code: 'RUN_NOT_FOUND' })]);

        // Alice's run id under a thread of Bob's: not his run.
        const bobsThread = (await asBob('POST', '/threads', {})).body.thread_id as string;
        for (const [method, path] of [
          ['GET', `/threads/${bobsThread}/runs/${runId}`],
          ['POST', `/threads/${bobsThread}/runs/${runId}/cancel`],
          ['GET', `/threads/${bobsThread}/runs/${runId}/join`],
          ['GET', `/threads/${bobsThread}/runs/${runId}/stream`],
        ] as const) {
          await unseen(method, path, runId, 'RUN_NOT_FOUND');
        }
        expect((await asAlice('GET', `/api/runs/${runId}`)).body.status).toBe('running');
      } finally {
        for (const release of GatedModel.held.splice(0)) release();
      }
      const sent = await sending;
      expect(sent.body.run).toMatchObject({ id: runId, status: 'succeeded' });
      expect(sent.body.messages.map((message: Json) => message.content)).toContain('Echo: work [hold]');
    });
  });

  describe('I12: the LangGraph protocol', () => {
    const input = (content: string) => ({ messages: [{ type: 'human', content }] });

    it("I12: another user's assistant: not counted, versions, latest, graph and schemas not found; an assistant Bob makes with its id is his own", async () => {
      const tag = `alice-${randomUUID().slice(0, 8)}`;
      const created = await asAlice('POST', '/assistants', { graph_id: 'chat', name: 'Alice private', description: `only ${tag}`, metadata: { owner: tag } });
      expect(created.status, created.text).toBe(200);
      const assistantId = created.body.assistant_id as string;

      expect((await asAlice('POST', '/assistants/count', { metadata: { owner: tag } })).body).toBe(1);
      expect((await asBob('POST', '/assistants/count', { metadata: { owner: tag } })).body).toBe(0);
      await unseen('POST', `/assistants/${assistantId}/versions`, assistantId, 'AGENT_NOT_FOUND', {});
      await unseen('POST', `/assistants/${assistantId}/latest`, assistantId, 'AGENT_NOT_FOUND', { version: 1 });
      await unseen('GET', `/assistants/${assistantId}/graph`, assistantId, 'AGENT_NOT_FOUND');
      await unseen('GET', `/assistants/${assistantId}/schemas`, assistantId, 'AGENT_NOT_FOUND');

      // Agent ids are per user: Bob's create with the id makes his own, and shows nothing of hers.
      const bobs = await asBob('POST', '/assistants', { assistant_id: assistantId, graph_id: 'chat', if_exists: 'do_nothing' });
      expect(bobs.status, bobs.text).toBe(200);
      expect(bobs.text).not.toContain(tag);
      expect(bobs.body.name).not.toBe('Alice private');
      expect((await asBob('DELETE', `/assistants/${assistantId}`)).status).toBe(204);
      expect((await asAlice('GET', `/assistants/${assistantId}`)).body).toMatchObject({ name: 'Alice private', metadata: { owner: tag } });
    });

    it("I12: another user's thread: state and copy refused as not found, no run starts on it (background or streamed), a search by its id finds nothing", async () => {
      const threadId = (await asAlice('POST', '/threads', {})).body.thread_id as string;
      const first = await asAlice('POST', `/threads/${threadId}/runs/wait`, { assistant_id: 'agent', input: input('hello') });
      expect(first.status, first.text).toBe(200);

      await unseen('POST', `/threads/${threadId}/state`, threadId, 'THREAD_NOT_FOUND', { values: { messages: [] } });
      await unseen('POST', `/threads/${threadId}/copy`, threadId, 'THREAD_NOT_FOUND');
      await unseen('POST', `/threads/${threadId}/runs`, threadId, 'THREAD_NOT_FOUND', { assistant_id: 'agent', input: input('let me in') });
      await unseen('POST', `/threads/${threadId}/runs/stream`, threadId, 'THREAD_NOT_FOUND', { assistant_id: 'agent', input: input('let me in') });
      expect((await asBob('POST', '/threads/search', { ids: [threadId] })).body).toEqual([]);
      expect(((await asAlice('POST', '/threads/search', { ids: [threadId] })).body as Json[]).map((thread) => thread.thread_id)).toEqual([threadId]);

      expect(((await asAlice('GET', `/threads/${threadId}/runs`)).body as Json[]).length).toBe(1);
      const history = await asAlice('GET', `/api/threads/${threadId}/history?include=internal`);
      expect(history.body.messages.map((message: Json) => message.content)).toEqual(['hello', 'Echo: hello']);
    });

    it("I12: a stateless run on another user's assistant is refused as not found, and leaves Bob no thread", async () => {
      const assistantId = (await asAlice('POST', '/assistants', { graph_id: 'chat', name: 'Alice stateless' })).body.assistant_id as string;
      await newThread(undefined, BOB.token);
      const bobsThreads = await threadIds(BOB.token);
      for (const path of ['/runs', '/runs/wait', '/runs/stream']) {
        await unseen('POST', path, assistantId, 'AGENT_NOT_FOUND', { assistant_id: assistantId, input: input('run as alice'), on_completion: 'keep' });
      }
      expect(await threadIds(BOB.token)).toEqual(bobsThreads);
    });

    it("I12: the store: another user's namespace is not listed nor searched, and his delete of her key in a namespace of his own deletes nothing", async () => {
      const assistantId = (await asAlice('POST', '/assistants', { graph_id: 'chat', name: 'Alice gardener' })).body.assistant_id as string;
      const key = randomUUID();
      expect((await asAlice('PUT', '/store/items', { namespace: ['memories', assistantId], key, value: { content: 'alice grows rare orchids' } })).status).toBe(204);
      await newThread(undefined, BOB.token);

      const namespaces = async (token: string) => ((await request('POST', '/store/namespaces', token, {})).body.namespaces as string[][]).map((namespace) => namespace.join('/'));
      expect(await namespaces(ALICE.token)).toContain(`memories/${assistantId}`);
      expect(await namespaces(BOB.token)).not.toContain(`memories/${assistantId}`);
      await unseen('POST', '/store/items/search', assistantId, 'AGENT_NOT_FOUND', { namespace_prefix: ['memories', assistantId], query: 'orchids' });
      const deleted = await asBob('DELETE', '/store/items', { namespace: ['memories', 'default'], key });
      expect([deleted.status, deleted.body.error.code]).toEqual([404, 'MEMORY_NOT_FOUND']);

      const kept = await asAlice('GET', `/store/items?namespace=memories.${assistantId}&key=${key}`);
      expect([kept.status, kept.body.value]).toEqual([200, { content: 'alice grows rare orchids' }]);
    });
  });

  describe('I12: a thread id another user had', () => {
    it("I12: Bob, on a thread made with the id of Alice's deleted thread, replays none of her events (WebSocket afterEventId, SSE after=0) and reads none of her state", async () => {
      const threadId = randomUUID();
      expect((await asAlice('POST', '/threads', { thread_id: threadId })).status).toBe(200);
      expect((await asAlice('POST', `/api/threads/${threadId}/messages`, { content: 'my PIN is qzxv-9876' })).status).toBe(200);
      // Read once, so that whatever caches the thread's state holds it (the context names messages by id).
      const aliceMessageIds = ((await asAlice('GET', `/api/threads/${threadId}/history?include=internal`)).body.messages as Json[]).map((message) => message.id as string);
      expect(aliceMessageIds).toHaveLength(2);
      for (const id of aliceMessageIds) expect((await asAlice('GET', `/api/threads/${threadId}/context`)).text).toContain(id);
      expect((await asAlice('GET', `/threads/${threadId}/state`)).text).toContain('qzxv');
      expect((await asAlice('DELETE', `/api/threads/${threadId}`)).status).toBe(204);
      expect((await asBob('POST', '/threads', { thread_id: threadId })).status).toBe(200);
      // The thread's reads, before Bob writes anything (what a cache kept would show now) and after: its context, state, history and runs.
      const readsNothingOfAlice = async () => {
        for (const [method, path] of [
          ['GET', `/api/threads/${threadId}/context`],
          ['GET', `/api/threads/${threadId}/history?include=internal`],
          ['GET', `/threads/${threadId}/state`],
          ['POST', `/threads/${threadId}/history`],
          ['GET', `/threads/${threadId}/runs`],
          ['GET', `/api/threads/${threadId}/runs`],
        ] as const) {
          const read = await asBob(method, path, method === 'POST' ? {} : undefined);
          expect(read.status, `${method} ${path}`).toBe(200);
          for (const secret of ['qzxv', ...aliceMessageIds]) expect(read.text, `${method} ${path}`).not.toContain(secret);
        }
      };
      await readsNothingOfAlice();

      const socket = await openSocket(server, BOB.token);
      socket.send({ type: 'thread.subscribe', threadId, afterEventId: 0 });
      await waitFor(() => socket.frames.some((frame) => frame.type === 'thread.subscribed'), 10_000, "Bob's subscription");
      const sse = await openEventStream(server.url, threadId, { token: BOB.token, after: 0 });
      try {
        expect(sse.status).toBe(200);
        const sent = await asBob('POST', `/api/threads/${threadId}/messages`, { content: 'hello from bob' });
        expect(sent.status).toBe(200);
        // Bob's own run ends on both: whatever was replayed came before it.
        const ended = (events: Json[]) => events.some((event) => event.type === 'run.end' && event.runId === sent.body.run.id);
        await waitFor(() => ended(socket.frames) && ended(sse.events.map((event) => event.data)), 10_000, "Bob's run's end on both streams");
        expect(JSON.stringify(socket.frames)).not.toContain('qzxv');
        expect(JSON.stringify(sse.events)).not.toContain('qzxv');
        expect(JSON.stringify(socket.frames)).toContain('hello from bob');
        await readsNothingOfAlice();
        expect(((await asBob('GET', `/api/threads/${threadId}/runs`)).body.runs as Json[]).map((run) => run.id)).toEqual([sent.body.run.id]);
      } finally {
        socket.socket.close();
        sse.close();
      }
    });
  });
}
