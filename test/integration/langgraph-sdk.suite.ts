import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@langchain/langgraph-sdk';
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { CallbackManagerForLLMRun } from '@langchain/core/callbacks/manager';
import { AIMessage, AIMessageChunk, HumanMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { ChatGenerationChunk, type ChatResult } from '@langchain/core/outputs';
import { textOf } from '../../src/domain/message-content.js';
import { ALICE, BOB, startTestServer, type Backend, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';
import { APPROVAL_RESUME_QUEUE } from '../../src/app/approvals/approval-service.js';
import { SqlProtocolStore } from '../../src/adapters/sql/protocol-repository.js';
import type { SqlStorage } from '../../src/adapters/sql/sql-storage.js';
import { newRunRecord } from '../../src/app/langgraph/protocol-store.js';

type Json = Record<string, any>;
const CAROL = { id: 'carol', token: 'carol-token-0123456789' };

/**
 * A fake chat model: answers "Echo: <text>" word by word. A person's text with `[hold]`
 * streams its first word, then waits until the test releases it (or the run is cancelled).
 */
export class GatedModel extends BaseChatModel {
  static held: Array<() => void> = [];
  override _llmType(): string {
    return 'gated-fake';
  }
  override bindTools(): this {
    return this;
  }
  override async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    refuseAfterTool(messages);
    const calls = toolCalls(messages);
    if (calls.length > 0) return { generations: [{ text: '', message: new AIMessage({ content: '', tool_calls: calls.map((call) => ({ ...call, type: 'tool_call' as const })) }) }] };
    const text = reply(messages);
    return { generations: [{ text, message: new AIMessage(text) }] };
  }
  override async *_streamResponseChunks(messages: BaseMessage[], options: this['ParsedCallOptions'], runManager?: CallbackManagerForLLMRun): AsyncGenerator<ChatGenerationChunk> {
    refuseAfterTool(messages);
    const calls = toolCalls(messages);
    if (calls.length > 0) {
      yield new ChatGenerationChunk({ text: '', message: new AIMessageChunk({ content: '', tool_call_chunks: calls.map((call, index) => ({ name: call.name, args: JSON.stringify(call.args), id: call.id, index, type: 'tool_call_chunk' as const })) }) });
      return;
    }
    const words = reply(messages).split(' ');
    const hold = lastHuman(messages).includes('[hold]');
    for (const [index, word] of words.entries()) {
      const text = index === 0 ? word : ` ${word}`;
      yield new ChatGenerationChunk({ text, message: new AIMessageChunk({ content: text }) });
      await runManager?.handleLLMNewToken(text);
      if (hold && index === 0) {
        await new Promise<void>((resolve, reject) => {
          GatedModel.held.push(resolve);
          options.signal?.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
        });
      }
    }
  }
}

/** A person's text with `[fail]`: the model call after a tool result is refused (a 400: not retried), so that run fails. */
function refuseAfterTool(messages: BaseMessage[]): void {
  const last = messages.at(-1);
  if (last && ToolMessage.isInstance(last) && lastHuman(messages).includes('[fail]')) throw Object.assign(new Error('the model refused the call'), { status: 400 });
}

function lastHuman(messages: BaseMessage[]): string {
  const human = [...messages].reverse().find((message) => HumanMessage.isInstance(message));
  return human ? textOf(human.content) : '';
}
function reply(messages: BaseMessage[]): string {
  const last = messages.at(-1);
  if (last && ToolMessage.isInstance(last)) return `Done: ${textOf(last.content)}`;
  return `Echo: ${lastHuman(messages)}`;
}
/** Each `[remember:<text>]` in a person's message: the model calls memory_write, all in one step (until a tool result answers them). */
function toolCalls(messages: BaseMessage[]): Array<{ name: string; args: Record<string, unknown>; id: string }> {
  const last = messages.at(-1);
  if (!last || ToolMessage.isInstance(last)) return [];
  return [...lastHuman(messages).matchAll(/\[remember:([^\]]+)\]/g)].map((match) => ({ name: 'memory_write', args: { content: match[1]! }, id: `call_${randomUUID().slice(0, 8)}` }));
}

export async function collect(stream: AsyncIterable<{ event: string; data: unknown; id?: string }>): Promise<Array<{ event: string; data: any; id?: string }>> {
  const events: Array<{ event: string; data: any; id?: string }> = [];
  for await (const part of stream) events.push(part as { event: string; data: any; id?: string });
  return events;
}

async function statusOf(promise: Promise<unknown>): Promise<number | undefined> {
  try {
    await promise;
    return undefined;
  } catch (error) {
    return (error as { status?: number }).status;
  }
}

/** The LangGraph Platform API, driven only through the official @langchain/langgraph-sdk client. */
export function langgraphSdkSuite(backend: () => Backend): void {
  let server: TestServer;
  let alice: Client;
  let bob: Client;

  beforeAll(async () => {
    server = await startTestServer(backend(), {
      models: () => new GatedModel({}),
      // Carol: a third person who uses nothing but what a test gives her (her default agent unmade).
      environment: { VIGIL_CORS_ORIGINS: 'http://ui.example', VIGIL_AUTH_TOKENS: `${ALICE.id}:${ALICE.token},${BOB.id}:${BOB.token},${CAROL.id}:${CAROL.token}` },
      langgraph: { heartbeatMs: 50 },
    });
    // The SDK's two ways to authenticate: x-api-key (apiKey) and a bearer header.
    alice = new Client({ apiUrl: server.url, apiKey: ALICE.token, callerOptions: { maxRetries: 0 } });
    bob = new Client({ apiUrl: server.url, apiKey: null, defaultHeaders: { Authorization: `Bearer ${BOB.token}` }, callerOptions: { maxRetries: 0 } });
  });
  afterAll(async () => {
    for (const release of GatedModel.held.splice(0)) release();
    await server?.destroy();
  });

  const release = async () => {
    await waitFor(() => GatedModel.held.length > 0, 10_000, 'a held model call');
    GatedModel.held.shift()!();
  };

  /**
   * The job that resumes a decided step comes `ms` after the decisions (as a busy queue
   * delivers it): the window between a resume's decisions and the start of their run, held
   * open. Returns what puts the queue back.
   */
  const delayResumes = (ms: number) => {
    const jobs = server.services.jobs;
    const schedule = jobs.schedule;
    jobs.schedule = async (job, options) => schedule.call(jobs, job.queue === APPROVAL_RESUME_QUEUE ? { ...job, dueAt: new Date(job.dueAt.getTime() + ms) } : job, options);
    return () => {
      jobs.schedule = schedule;
    };
  };

  /** An assistant that asks before memory_write, and a thread of it waiting for a decision on one call. */
  const waitingResume = async (name: string, content: string, metadata: Json = {}) => {
    const assistant = await alice.assistants.create({ graphId: 'chat', name });
    await server.services.agents.updateSetting(ALICE.id, assistant.assistant_id, 'tools', { approval: { memory_write: { attended: 'ask' } } });
    const thread = await alice.threads.create({ metadata });
    const waiting = (await alice.runs.wait(thread.thread_id, assistant.assistant_id, { input: { messages: [{ type: 'human', content }] } })) as Json;
    expect(waiting.__interrupt__).toHaveLength(1);
    const decided = async () => ((await server.request('GET', `/api/approvals?threadId=${thread.thread_id}`)).body.approvals as Json[]).every((approval) => approval.status !== 'pending');
    return { assistant, thread, decided };
  };

  describe('info, auth and CORS', () => {
    it('GET /info and /ok answer without a key; the API needs one', async () => {
      const info = await server.request('GET', '/info', { token: '' });
      expect(info.status).toBe(200);
      expect(info.body.flags.assistants).toBe(true);
      expect((await server.request('GET', '/ok', { token: '' })).body).toEqual({ ok: true });
      const anonymous = new Client({ apiUrl: server.url, apiKey: null, callerOptions: { maxRetries: 0 } });
      expect(await statusOf(anonymous.threads.search())).toBe(401);
      const wrong = new Client({ apiUrl: server.url, apiKey: 'not-a-token', callerOptions: { maxRetries: 0 } });
      expect(await statusOf(wrong.assistants.search())).toBe(401);
    });

    it('CORS: a preflight from an allowed origin is answered; another origin gets no CORS headers', async () => {
      const preflight = await fetch(`${server.url}/threads/search`, { method: 'OPTIONS', headers: { origin: 'http://ui.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'x-api-key, content-type' } });
      expect(preflight.status).toBe(204);
      expect(preflight.headers.get('access-control-allow-origin')).toBe('http://ui.example');
      expect(preflight.headers.get('access-control-allow-headers')).toContain('x-api-key');
      const other = await fetch(`${server.url}/ok`, { headers: { origin: 'http://evil.example' } });
      expect(other.headers.get('access-control-allow-origin')).toBeNull();
      // The router's own refusal comes before any hook; the page can still read it.
      const refused = await fetch(`${server.url}/threads/%FF`, { headers: { origin: 'http://ui.example' } });
      expect(refused.status).toBe(400);
      expect(refused.headers.get('access-control-allow-origin')).toBe('http://ui.example');
      expect(((await refused.json()) as Json).error.code).toBe('VALIDATION_FAILED');
    });
  });

  describe('assistants ↔ agents', () => {
    it('create, get, search, update, graph, schemas, delete; another user gets 404 (I12)', async () => {
      const created = await alice.assistants.create({ graphId: 'agent', name: 'Helper', metadata: { team: 'red' }, context: { system_prompt: 'Be brief.' } });
      expect(created).toMatchObject({ graph_id: 'chat', name: 'Helper', metadata: { team: 'red' } });
      const id = created.assistant_id;
      expect((await alice.assistants.get(id)).context).toMatchObject({ system_prompt: 'Be brief.' });
      const found = await alice.assistants.search({ metadata: { team: 'red' } });
      expect(found.map((assistant) => assistant.assistant_id)).toEqual([id]);
      expect((await alice.assistants.search({ graphId: 'agent', limit: 100 })).map((assistant) => assistant.assistant_id)).toEqual(expect.arrayContaining([id, 'default']));
      const updated = await alice.assistants.update(id, { name: 'Renamed', metadata: { tier: 2 } });
      expect(updated).toMatchObject({ name: 'Renamed', metadata: { team: 'red', tier: 2 } });
      const graph = await alice.assistants.getGraph(id);
      expect(JSON.stringify(graph)).toContain('__start__');
      const schemas = await alice.assistants.getSchemas(id);
      expect(schemas.input_schema).toMatchObject({ required: ['messages'] });
      expect(await statusOf(alice.assistants.create({ graphId: 'chat', assistantId: id }))).toBe(409);
      expect((await alice.assistants.create({ graphId: 'chat', assistantId: id, ifExists: 'do_nothing' })).name).toBe('Renamed');
      expect(await statusOf(alice.assistants.update(id, { config: { configurable: { temperature: 1 } } }))).toBe(422);
      expect(await statusOf(bob.assistants.get(id))).toBe(404);
      expect(await statusOf(bob.assistants.update(id, { name: 'x' }))).toBe(404);
      expect(await statusOf(bob.assistants.delete(id))).toBe(404);
      expect((await bob.assistants.search({ limit: 100 })).map((assistant) => assistant.assistant_id)).not.toContain(id);
      expect(await alice.assistants.count({ metadata: { team: 'red' } })).toBe(1);
      expect((await alice.assistants.getVersions(id)).map((version) => version.version)).toEqual([1]);
      // Its threads go with it in vigil: only when asked to.
      const thread = await alice.threads.create();
      await alice.runs.wait(thread.thread_id, id, { input: { messages: [{ type: 'human', content: 'bind me' }] } });
      expect(await statusOf(alice.assistants.delete(id))).toBe(409);
      await alice.assistants.delete(id, { deleteThreads: true });
      expect(await statusOf(alice.assistants.get(id))).toBe(404);
      expect(await statusOf(alice.threads.get(thread.thread_id))).toBe(404);
    });

    it("an assistant's id follows vigil's agent id rules, and neither route lets an agent take `agent` or `chat`, the default agent's aliases", async () => {
      const refusedCode = async (path: string, body: Json) => {
        const answer = await server.request('POST', path, { body });
        return [answer.status, answer.body?.error?.code];
      };
      for (const id of ['UPPER CASE', 'X Y', 'a.b/c', 'Caps', '-leading', 'x'.repeat(65)]) {
        expect(await refusedCode('/assistants', { graph_id: 'chat', assistant_id: id }), id).toEqual([400, 'VALIDATION_FAILED']);
        expect(await refusedCode('/api/agents', { id, name: 'n' }), id).toEqual([400, 'VALIDATION_FAILED']);
      }
      // Agent Chat UI's thread with the default agent, under the alias `agent`.
      const thread = await alice.threads.create();
      const input = { messages: [{ type: 'human', content: 'hello default' }] };
      await alice.runs.wait(thread.thread_id, 'agent', { input });
      for (const id of ['agent', 'chat']) {
        for (const [path, body] of [
          ['/assistants', { graph_id: 'chat', assistant_id: id }],
          ['/assistants', { graph_id: 'chat', assistant_id: id, if_exists: 'do_nothing' }],
          ['/api/agents', { id, name: 'Hijacker' }],
        ] as const) {
          const refused = await server.request('POST', path, { body });
          expect([refused.status, refused.body?.error?.code], `${path} ${id}`).toEqual([400, 'VALIDATION_FAILED']);
          expect(refused.body.error.message).toContain('"agent" and "chat" are reserved');
        }
      }
      const agentIds = (await server.services.agents.list(ALICE.id)).map((agent) => agent.id);
      for (const id of ['agent', 'chat', 'UPPER CASE', 'a.b/c']) expect(agentIds).not.toContain(id);
      // The alias still names the default agent: the thread goes on.
      const again = (await alice.runs.wait(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content: 'still you?' }] } })) as Json;
      expect(again.messages.at(-1).content).toBe('Echo: still you?');
      expect((await alice.assistants.get('agent')).assistant_id).toBe('default');
      // Another user's alias is their own default agent; Alice's thread stays hers.
      expect((await bob.assistants.get('agent')).assistant_id).toBe('default');
      expect(await statusOf(bob.runs.wait(thread.thread_id, 'agent', { input }))).toBe(404);
    });
  });

  describe('threads', () => {
    it('create with metadata and ifExists, get, search by metadata, update (merge), delete; another user gets 404 (I12)', async () => {
      const tag = randomUUID();
      const thread = await alice.threads.create({ metadata: { tag, user: 'alice' } });
      expect(thread).toMatchObject({ status: 'idle', metadata: { tag, user: 'alice' }, values: { messages: [] } });
      const chosen = randomUUID();
      await alice.threads.create({ threadId: chosen, metadata: { tag } });
      expect(await statusOf(alice.threads.create({ threadId: chosen }))).toBe(409);
      expect((await alice.threads.create({ threadId: chosen, ifExists: 'do_nothing' })).thread_id).toBe(chosen);
      expect((await alice.threads.get(thread.thread_id)).metadata?.tag).toBe(tag);
      const found = await alice.threads.search({ metadata: { tag }, limit: 10 });
      expect(found.map((entry) => entry.thread_id).sort()).toEqual([thread.thread_id, chosen].sort());
      expect((await alice.threads.search({ metadata: { tag, user: 'alice' } })).map((entry) => entry.thread_id)).toEqual([thread.thread_id]);
      expect(await alice.threads.search({ metadata: { tag, user: 'alice' }, select: ['thread_id', 'status'] })).toEqual([{ thread_id: thread.thread_id, status: 'idle' }]);
      expect(await alice.threads.count({ metadata: { tag } })).toBe(2);
      expect(await bob.threads.count({ metadata: { tag } })).toBe(0);
      const updated = await alice.threads.update(thread.thread_id, { metadata: { stage: 'two' } });
      expect(updated.metadata).toMatchObject({ tag, user: 'alice', stage: 'two' });
      expect(await statusOf(alice.threads.update(thread.thread_id, { metadata: { vigil: 'forged' } }))).toBe(400);

      expect(await statusOf(bob.threads.get(thread.thread_id))).toBe(404);
      expect(await statusOf(bob.threads.update(thread.thread_id, { metadata: { x: 1 } }))).toBe(404);
      expect(await statusOf(bob.threads.getState(thread.thread_id))).toBe(404);
      expect(await statusOf(bob.threads.getHistory(thread.thread_id))).toBe(404);
      expect(await statusOf(bob.threads.delete(thread.thread_id))).toBe(404);
      expect(await bob.threads.search({ metadata: { tag } })).toEqual([]);
      // Bob cannot take Alice's thread id either, nor make it with a run; he sees none of it.
      expect(await statusOf(bob.threads.create({ threadId: chosen }))).toBe(409);
      expect(await statusOf(bob.runs.wait(chosen, 'agent', { input: { messages: [{ type: 'human', content: 'mine?' }] }, ifNotExists: 'create' }))).toBe(409);
      expect(await statusOf(bob.runs.wait(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content: 'hi' }] } }))).toBe(404);

      await alice.threads.delete(chosen);
      expect(await statusOf(alice.threads.get(chosen))).toBe(404);
    });

    it('a metadata filter matches as LangGraph Platform\'s does (jsonb containment): nested keys in any order, part of an object, items of an array; another user finds nothing (I12)', async () => {
      const tag = randomUUID();
      const assistant = await alice.assistants.create({ graphId: 'chat', name: 'Filtered', metadata: { team: { name: 'ops', size: 3 } } });
      const thread = await alice.threads.create({ metadata: { tag, owner: { id: 7, name: 'alice' }, labels: ['red', 'blue'] } });
      await alice.runs.wait(thread.thread_id, assistant.assistant_id, { input: { messages: [{ type: 'human', content: 'hello' }] } });
      const other = await alice.threads.create({ metadata: { tag, owner: { id: 8, name: 'alice' }, labels: ['green'] } });
      const ids = async (metadata: Json) => (await alice.threads.search({ metadata, limit: 100 })).map((found) => found.thread_id).sort();
      expect(await ids({ tag, owner: { name: 'alice', id: 7 } })).toEqual([thread.thread_id]);
      expect(await ids({ tag, owner: { name: 'alice' } })).toEqual([thread.thread_id, other.thread_id].sort());
      expect(await ids({ tag, labels: ['blue'] })).toEqual([thread.thread_id]);
      expect(await ids({ tag, vigil: { agent_id: assistant.assistant_id } })).toEqual([thread.thread_id]);
      expect(await ids({ tag, owner: { id: 7, name: 'bob' } })).toEqual([]);
      expect(await ids({ tag, labels: 'blue' })).toEqual([]);
      expect(await alice.threads.count({ metadata: { tag, owner: { name: 'alice' } } })).toBe(2);
      expect((await alice.assistants.search({ metadata: { team: { size: 3 } } })).map((found) => found.assistant_id)).toEqual([assistant.assistant_id]);
      expect(await alice.assistants.count({ metadata: { team: { name: 'ops' } } })).toBe(1);
      expect(await bob.threads.search({ metadata: { tag, owner: { name: 'alice' } } })).toEqual([]);
      expect(await bob.threads.count({ metadata: { tag } })).toBe(0);
      expect(await bob.assistants.search({ metadata: { team: { size: 3 } } })).toEqual([]);
    });

    it('a deleted thread\'s runs go with it, as LangGraph\'s do: a thread made again with its id lists none of them', async () => {
      const chosen = randomUUID();
      await alice.threads.create({ threadId: chosen });
      const first = (await alice.runs.create(chosen, 'agent', { input: { messages: [{ type: 'human', content: 'first life' }] } })).run_id;
      await alice.runs.join(chosen, first);
      expect((await alice.runs.list(chosen)).map((run) => run.run_id)).toEqual([first]);

      const vigilRunId = ((await server.request('GET', `/api/threads/${chosen}/runs`)).body.runs as Array<{ id: string }>)[0]!.id;
      await alice.threads.delete(chosen);

      await alice.threads.create({ threadId: chosen });
      expect(await alice.runs.list(chosen)).toEqual([]);
      expect(await statusOf(alice.runs.get(chosen, first))).toBe(404);
      expect((await server.request('GET', `/api/threads/${chosen}/runs`)).body.runs).toEqual([]);
      // The run's record stays, as a deleted thread's runs always do.
      expect((await server.request('GET', `/api/runs/${vigilRunId}`)).body).toMatchObject({ id: vigilRunId, threadId: chosen, status: 'succeeded' });
      expect(await statusOf(bob.runs.list(chosen))).toBe(404);
    });
  });

  describe('thread ids', () => {
    it('a thread id the client chooses is a UUID: anything else is refused with 400 VALIDATION_FAILED and makes nothing', async () => {
      const input = { messages: [{ type: 'human', content: 'x' }] };
      const before = await alice.threads.count();
      for (const threadId of ['not-a-uuid', '   ', 'a/b?c#d', '', `${randomUUID()}x`, randomUUID().replaceAll('-', '')]) {
        const refused = await server.request('POST', '/threads', { body: { thread_id: threadId } });
        expect([refused.status, refused.body.error?.code], JSON.stringify(threadId)).toEqual([400, 'VALIDATION_FAILED']);
      }
      for (const threadId of ['not-a-uuid', 'project-notes']) {
        const refused = await server.request('POST', `/threads/${threadId}/runs/wait`, { body: { assistant_id: 'agent', input, if_not_exists: 'create' } });
        expect([refused.status, refused.body.error?.code], threadId).toEqual([400, 'VALIDATION_FAILED']);
        expect(refused.body.error.message).toContain('UUID');
        // Without if_not_exists the run makes no thread: a thread that is not there is 404.
        expect((await server.request('POST', `/threads/${threadId}/runs`, { body: { assistant_id: 'agent', input } })).status).toBe(404);
      }
      expect(await alice.threads.count()).toBe(before);
      // A UUID is taken, in either case of its hex digits; another user's run on it is 404.
      const chosen = randomUUID().toUpperCase();
      expect((await alice.threads.create({ threadId: chosen })).thread_id).toBe(chosen);
      expect(await statusOf(bob.runs.wait(chosen, 'agent', { input }))).toBe(404);
    });
  });

  describe('threads made concurrently', () => {
    it("concurrent creates of one new id answer the caller's own thread: if_exists=do_nothing and runs with if_not_exists=create all succeed; another user is refused and sees none of it", async () => {
      const threadId = randomUUID();
      const creates = await Promise.all(Array.from({ length: 10 }, () => server.request('POST', '/threads', { body: { thread_id: threadId, if_exists: 'do_nothing' } })));
      expect(creates.map((created) => created.status)).toEqual(Array(10).fill(200));
      expect(new Set(creates.map((created) => created.body.thread_id))).toEqual(new Set([threadId]));
      // if_exists=raise: exactly one is made; the others find the caller's own thread.
      const raised = randomUUID();
      const raises = await Promise.all(Array.from({ length: 5 }, () => server.request('POST', '/threads', { body: { thread_id: raised } })));
      expect(raises.map((created) => created.status).sort()).toEqual([200, 409, 409, 409, 409]);
      expect(raises.filter((created) => created.status === 409).map((created) => created.body.error.code)).toEqual(Array(4).fill('THREAD_EXISTS'));

      const runThread = randomUUID();
      const started = await Promise.all(
        Array.from({ length: 5 }, (_, index) =>
          server.request('POST', `/threads/${runThread}/runs`, { body: { assistant_id: 'agent', input: { messages: [{ type: 'human', content: `turn ${index}` }] }, if_not_exists: 'create', multitask_strategy: 'enqueue' } }),
        ),
      );
      expect(started.map((run) => run.status)).toEqual(Array(5).fill(200));
      for (const run of started) await alice.runs.join(runThread, run.body.run_id as string);
      const state = await alice.threads.getState<{ messages: Json[] }>(runThread);
      expect(state.values.messages.filter((message) => message.type === 'human').map((message) => message.content).sort()).toEqual([0, 1, 2, 3, 4].map((index) => `turn ${index}`));
      expect(state.values.messages).toHaveLength(10);

      // Bob racing for Alice's ids is refused every time, and learns nothing of her threads.
      const bobs = await Promise.all([threadId, runThread].map((id) => server.request('POST', '/threads', { token: BOB.token, body: { thread_id: id, if_exists: 'do_nothing' } })));
      expect(bobs.map((created) => [created.status, created.body.error.code])).toEqual(Array(2).fill([409, 'THREAD_EXISTS']));
      expect(await statusOf(bob.threads.get(threadId))).toBe(404);
      expect(await statusOf(bob.runs.list(runThread))).toBe(404);
    });
  });

  describe('store ↔ memory', () => {
    it("put, get, search, list namespaces, delete, as the agent's vigil memory; another user gets 404 (I12)", async () => {
      const assistant = await alice.assistants.create({ graphId: 'chat', name: 'Rememberer' });
      const namespace = ['memories', assistant.assistant_id];
      const key = randomUUID();
      await alice.store.putItem(namespace, key, { content: 'Alice prefers green tea' });
      expect((await alice.store.getItem(namespace, key))?.value).toEqual({ content: 'Alice prefers green tea' });
      // It is a vigil memory of that agent.
      expect((await server.services.memories.list(ALICE.id, assistant.assistant_id, 10)).map((memory) => memory.content)).toEqual(['Alice prefers green tea']);
      await alice.store.putItem(namespace, key, { content: 'Alice prefers black tea' });
      const hits = await alice.store.searchItems(namespace, { query: 'tea' });
      expect(hits.items.map((item) => [item.key, item.value.content])).toEqual([[key, 'Alice prefers black tea']]);
      expect((await alice.store.listNamespaces({ prefix: ['memories'] })).namespaces).toContainEqual(namespace);
      expect(await statusOf(alice.store.putItem(['somewhere', 'else'], randomUUID(), { content: 'x' }))).toBe(422);
      expect(await statusOf(alice.store.putItem(namespace, randomUUID(), { text: 'not content' }))).toBe(422);
      expect(await statusOf(bob.store.getItem(namespace, key))).toBe(404);
      expect(await statusOf(bob.store.deleteItem(namespace, key))).toBe(404);
      expect((await bob.store.searchItems(['memories'], { query: 'tea' })).items).toEqual([]);
      await alice.store.deleteItem(namespace, key);
      expect(await statusOf(alice.store.getItem(namespace, key))).toBe(404);
    });
  });

  describe('store ↔ memory: by key', () => {
    it('a memory older than the newest 1000 of its agent is read, replaced and deleted by its key, as search finds it; another user gets 404', async () => {
      const assistant = await alice.assistants.create({ graphId: 'chat', name: 'Long memory' });
      const namespace = ['memories', assistant.assistant_id];
      const oldKey = randomUUID();
      await alice.store.putItem(namespace, oldKey, { content: 'The oldest note: marmalade recipe' });
      // A thousand newer memories of the same agent.
      const later = Date.now() + 60_000;
      for (let start = 0; start < 1000; start += 100) {
        await Promise.all(
          Array.from({ length: 100 }, (_, index) =>
            server.storage.memories.add({ userId: ALICE.id, agentId: assistant.assistant_id }, { id: randomUUID(), content: `newer note ${start + index}`, origin: { by: 'api' } }, new Date(later + start + index).toISOString()),
          ),
        );
      }
      expect((await alice.store.searchItems(namespace, { query: 'marmalade' })).items.map((item) => item.key)).toEqual([oldKey]);
      expect((await alice.store.getItem(namespace, oldKey))?.value).toEqual({ content: 'The oldest note: marmalade recipe' });
      await alice.store.putItem(namespace, oldKey, { content: 'The oldest note, revised: marmalade with ginger' });
      expect((await alice.store.getItem(namespace, oldKey))?.value).toEqual({ content: 'The oldest note, revised: marmalade with ginger' });
      expect((await alice.store.searchItems(namespace, { query: 'marmalade' })).items.map((item) => [item.key, item.value.content])).toEqual([[oldKey, 'The oldest note, revised: marmalade with ginger']]);
      expect(await statusOf(bob.store.getItem(namespace, oldKey))).toBe(404);
      expect(await statusOf(bob.store.deleteItem(namespace, oldKey))).toBe(404);
      // Under another of Alice's agents the key names nothing.
      expect(await statusOf(alice.store.getItem(['memories', 'default'], oldKey))).toBe(404);
      expect(await statusOf(alice.store.deleteItem(['memories', 'default'], oldKey))).toBe(404);
      await alice.store.deleteItem(namespace, oldKey);
      expect(await statusOf(alice.store.getItem(namespace, oldKey))).toBe(404);
      expect((await alice.store.searchItems(namespace, { query: 'marmalade' })).items).toEqual([]);
    });
  });

  describe('store ↔ memory: the default agent\'s aliases', () => {
    it('namespace ["memories", "agent"] or ["memories", "chat"] is the default agent\'s, as the assistant ids are; answers name it "default"', async () => {
      const key = randomUUID();
      await alice.store.putItem(['memories', 'agent'], key, { content: 'Alice keeps bees' });
      const item = await alice.store.getItem(['memories', 'chat'], key);
      expect(item).toMatchObject({ namespace: ['memories', 'default'], value: { content: 'Alice keeps bees' } });
      expect((await alice.store.getItem(['memories', 'default'], key))?.value).toEqual({ content: 'Alice keeps bees' });
      expect((await alice.store.searchItems(['memories', 'agent'], { query: 'bees' })).items.map((hit) => hit.key)).toEqual([key]);
      // Another user's "agent" is their own default agent: nothing of Alice's (I12).
      expect(await statusOf(bob.store.getItem(['memories', 'agent'], key))).toBe(404);
      expect((await bob.store.searchItems(['memories', 'agent'], { query: 'bees' })).items).toEqual([]);
      await alice.store.deleteItem(['memories', 'chat'], key);
      expect(await statusOf(alice.store.getItem(['memories', 'default'], key))).toBe(404);
    });
  });

  describe('store ↔ memory: content', () => {
    it("a value's content is capped as POST /api/agents/{id}/memories caps it (10,000 characters): longer is 400 VALIDATION_FAILED and writes nothing, a replace included", async () => {
      const assistant = await alice.assistants.create({ graphId: 'chat', name: 'Capped' });
      const namespace = ['memories', assistant.assistant_id];
      const put = (key: string, content: string) => server.request('PUT', '/store/items', { body: { namespace, key, value: { content } } });
      const key = randomUUID();
      expect((await put(key, 'x'.repeat(10_000))).status).toBe(204);
      for (const length of [10_001, 200_000]) {
        const refused = await put(randomUUID(), 'y'.repeat(length));
        expect([refused.status, refused.body?.error?.code], String(length)).toEqual([400, 'VALIDATION_FAILED']);
        const replaced = await put(key, 'z'.repeat(length));
        expect([replaced.status, replaced.body?.error?.code], String(length)).toEqual([400, 'VALIDATION_FAILED']);
        // The same content through vigil's own route: the same answer.
        const direct = await server.request('POST', `/api/agents/${assistant.assistant_id}/memories`, { body: { content: 'y'.repeat(length) } });
        expect([direct.status, direct.body?.error?.code], String(length)).toEqual([400, 'VALIDATION_FAILED']);
      }
      expect((await server.services.memories.list(ALICE.id, assistant.assistant_id, 10)).map((memory) => [memory.id, memory.content.length])).toEqual([[key, 10_000]]);
      // Another user has no such namespace.
      expect((await server.request('PUT', '/store/items', { token: BOB.token, body: { namespace, key: randomUUID(), value: { content: 'fits' } } })).status).toBe(404);
    });
  });

  describe('store ↔ memory: replacing', () => {
    it('a replace is one write: puts of one key sent at once all succeed and leave one of them, and a read meanwhile always finds the memory', async () => {
      const assistant = await alice.assistants.create({ graphId: 'chat', name: 'Rewriter' });
      const namespace = ['memories', assistant.assistant_id];
      const key = randomUUID();
      await alice.store.putItem(namespace, key, { content: 'version zero' });
      const contents = Array.from({ length: 10 }, (_, index) => `version ${index + 1}`);
      const [puts, reads] = await Promise.all([
        Promise.all(contents.map((content) => server.request('PUT', '/store/items', { body: { namespace, key, value: { content } } }))),
        Promise.all(contents.map(() => server.request('GET', `/store/items?namespace=memories.${assistant.assistant_id}&key=${key}`))),
      ]);
      expect(puts.map((put) => put.status)).toEqual(Array(10).fill(204));
      expect(reads.map((read) => read.status)).toEqual(Array(10).fill(200));
      const memories = await server.services.memories.list(ALICE.id, assistant.assistant_id, 10);
      expect(memories).toHaveLength(1);
      expect(memories[0]!.id).toBe(key);
      expect(contents).toContain(memories[0]!.content);
      expect(await statusOf(bob.store.getItem(namespace, key))).toBe(404);
    });
  });

  describe('store ↔ memory: timestamps', () => {
    it("a replace keeps the item's created_at and moves its updated_at, as the LangGraph store does; another user reads neither", async () => {
      const assistant = await alice.assistants.create({ graphId: 'chat', name: 'Dated' });
      const namespace = ['memories', assistant.assistant_id];
      const key = randomUUID();
      await alice.store.putItem(namespace, key, { content: 'Alice grows tomatoes' });
      const first = (await alice.store.getItem(namespace, key))!;
      expect(first.updatedAt).toBe(first.createdAt);
      // A replace in the same millisecond could not show the move: let the clock pass the first write.
      await waitFor(() => Date.now() > Date.parse(first.createdAt), 1_000, 'the clock to pass the first write');
      await alice.store.putItem(namespace, key, { content: 'Alice grows tomatoes and basil' });
      const replaced = (await alice.store.getItem(namespace, key))!;
      expect(replaced).toMatchObject({ value: { content: 'Alice grows tomatoes and basil' }, createdAt: first.createdAt });
      expect(Date.parse(replaced.updatedAt)).toBeGreaterThan(Date.parse(first.createdAt));
      // Search answers the same item.
      const [hit] = (await alice.store.searchItems(namespace, { query: 'basil' })).items;
      expect(hit).toMatchObject({ key, createdAt: first.createdAt, updatedAt: replaced.updatedAt });
      expect(await statusOf(bob.store.getItem(namespace, key))).toBe(404);
      expect((await bob.store.searchItems(['memories'], { query: 'basil' })).items).toEqual([]);
    });
  });

  describe('store ↔ memory: keys held elsewhere', () => {
    it('a key another memory holds (of another agent of the same user, or of another user) is refused with 409 MEMORY_EXISTS, and that memory stays as it was', async () => {
      const assistant = await alice.assistants.create({ graphId: 'chat', name: 'Keeper' });
      const namespace = ['memories', assistant.assistant_id];
      const key = randomUUID();
      await alice.store.putItem(namespace, key, { content: 'Alice keeps bees' });
      const bobs = await bob.assistants.create({ graphId: 'chat', name: "Bob's" });
      const another = await alice.assistants.create({ graphId: 'chat', name: 'Another of hers' });
      const put = (token: string, agentId: string, content: string) => server.request('PUT', '/store/items', { token, body: { namespace: ['memories', agentId], key, value: { content } } });
      for (const [token, agentId] of [
        [BOB.token, bobs.assistant_id],
        [ALICE.token, another.assistant_id],
      ] as const) {
        const taken = await put(token, agentId, 'somebody else');
        expect([taken.status, taken.body?.error?.code], agentId).toEqual([409, 'MEMORY_EXISTS']);
      }
      expect((await alice.store.getItem(namespace, key))?.value).toEqual({ content: 'Alice keeps bees' });
      expect(await statusOf(bob.store.getItem(['memories', bobs.assistant_id], key))).toBe(404);
      expect((await bob.store.searchItems(['memories'], { query: 'bees' })).items).toEqual([]);
    });
  });

  describe('crons ↔ schedules', () => {
    it('a refused cron or run, or a search for crons, writes nothing: no default agent is made for it', async () => {
      const carol = new Client({ apiUrl: server.url, apiKey: CAROL.token, callerOptions: { maxRetries: 0 } });
      const agentIds = async () => (await server.services.agents.list(CAROL.id)).map((agent) => agent.id);
      const thread = await alice.threads.create();
      const task = { messages: [{ type: 'human', content: 'x' }] };
      expect(await statusOf(carol.crons.createForThread(thread.thread_id, 'agent', { schedule: '* * * * *', input: task }))).toBe(404);
      expect(await statusOf(carol.crons.create('agent', { schedule: 'not a cron', input: task }))).toBe(400);
      expect(await statusOf(carol.crons.create('agent', { schedule: '* * * * *', input: { messages: [] } }))).toBe(400);
      expect(await carol.crons.search({ assistantId: 'agent' })).toEqual([]);
      expect(await statusOf(carol.runs.wait(thread.thread_id, 'agent', { input: task }))).toBe(404);
      expect(await agentIds()).toEqual([]);
      // A cron that is made does make it, as any first use does.
      await carol.crons.create('agent', { schedule: '* * * * *', input: task });
      expect(await agentIds()).toContain('default');
    });

    it('create on a thread and stateless, search, pause, delete; another user gets 404 (I12)', async () => {
      const thread = await alice.threads.create();
      const onThread = await alice.crons.createForThread(thread.thread_id, 'agent', { schedule: '0 9 * * 1', timezone: 'Europe/Berlin', input: { messages: [{ type: 'human', content: 'Weekly summary' }] } });
      expect(onThread).toMatchObject({ thread_id: thread.thread_id, schedule: '0 9 * * 1', enabled: true });
      expect((onThread as Json).next_run_date).toEqual(expect.any(String));
      const schedule = await server.services.schedules.get(ALICE.id, onThread.cron_id);
      expect(schedule).toMatchObject({ target: 'thread', threadId: thread.thread_id, task: 'Weekly summary', timing: { kind: 'cron', cron: '0 9 * * 1', timezone: 'Europe/Berlin' } });
      const stateless = await alice.crons.create('agent', { schedule: '30 7 * * *', input: { messages: [{ type: 'human', content: 'Daily digest' }] } });
      expect(stateless.thread_id).toBeNull();
      const mine = await alice.crons.search({ threadId: thread.thread_id });
      expect(mine.map((cron) => cron.cron_id)).toEqual([onThread.cron_id]);
      const paused = await alice.crons.update(onThread.cron_id, { enabled: false });
      expect(paused).toMatchObject({ enabled: false, next_run_date: null });
      expect(await statusOf(alice.crons.create('agent', { schedule: 'not a cron', input: { messages: [{ type: 'human', content: 'x' }] } }))).toBe(400);
      expect(await statusOf(alice.crons.create('agent', { schedule: '* * * * *', input: { messages: [{ type: 'human', content: 'x' }] }, webhook: 'https://example.com' }))).toBe(422);
      expect(await statusOf(bob.crons.update(onThread.cron_id, { enabled: true }))).toBe(404);
      expect(await statusOf(bob.crons.delete(onThread.cron_id))).toBe(404);
      expect(await statusOf(bob.crons.createForThread(thread.thread_id, 'agent', { schedule: '* * * * *', input: { messages: [{ type: 'human', content: 'x' }] } }))).toBe(404);
      expect(await bob.crons.search()).toEqual([]);
      await alice.crons.delete(onThread.cron_id);
      await alice.crons.delete(stateless.cron_id);
      expect(await alice.crons.search({ threadId: thread.thread_id })).toEqual([]);
    });
  });

  describe('runs', () => {
    it('wait: the final values; state and history show visible messages only (I2), vigil runs listed with metadata.vigil', async () => {
      const thread = await alice.threads.create();
      const values = (await alice.runs.wait(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content: 'hello there' }] }, metadata: { source: 'sdk' } })) as Json;
      expect(values.messages.map((message: Json) => [message.type, message.content])).toEqual([
        ['human', 'hello there'],
        ['ai', 'Echo: hello there'],
      ]);
      // A system-started run writes a synthetic message (internal): never in values, state or history.
      await server.services.conversations.runTriggered(ALICE.id, thread.thread_id, {
        trigger: 'cron',
        input: new HumanMessage({ id: randomUUID(), content: 'scheduled check', additional_kwargs: { synthetic: true, trigger_type: 'cron', trigger_reason: 'test' } }),
      });
      const state = await alice.threads.getState<{ messages: Json[] }>(thread.thread_id);
      const contents = state.values.messages.map((message) => message.content);
      expect(contents).not.toContain('scheduled check');
      expect(contents).toEqual(['hello there', 'Echo: hello there', 'Echo: scheduled check']);
      const history = await alice.threads.getHistory<{ messages: Json[] }>(thread.thread_id, { limit: 2 });
      expect(history.map((entry) => entry.values.messages.length)).toEqual([3, 2]);
      expect(history[0]!.checkpoint.checkpoint_id).toBe(state.checkpoint.checkpoint_id);
      const earlier = await alice.threads.getHistory<{ messages: Json[] }>(thread.thread_id, { before: { configurable: { checkpoint_id: history[1]!.checkpoint.checkpoint_id } } });
      expect(earlier[0]!.values.messages.length).toBe(1);
      // A checkpoint the thread does not have is that, not a missing thread; another user's thread stays not found.
      for (const checkpoint of ['vigil-99999', 'garbage']) {
        const missing = await server.request('GET', `/threads/${thread.thread_id}/state/${checkpoint}`);
        expect([missing.status, missing.body.error.code]).toEqual([404, 'CHECKPOINT_NOT_FOUND']);
        const bobs = await server.request('GET', `/threads/${thread.thread_id}/state/${checkpoint}`, { token: BOB.token });
        expect([bobs.status, bobs.body.error.code]).toEqual([404, 'THREAD_NOT_FOUND']);
      }
      const runs = await alice.runs.list(thread.thread_id);
      expect(runs.map((run) => [run.status, (run.metadata as Json).vigil.trigger])).toEqual([
        ['success', 'cron'],
        ['success', 'user'],
      ]);
      expect(runs[1]!.metadata).toMatchObject({ source: 'sdk' });
      expect((await alice.runs.get(thread.thread_id, runs[1]!.run_id)).assistant_id).toBe('default');
      expect(await statusOf(bob.runs.get(thread.thread_id, runs[1]!.run_id))).toBe(404);
      expect(await statusOf(bob.runs.list(thread.thread_id))).toBe(404);
    });

    it("I11, I12: history `before` a checkpoint the thread does not have is 404 CHECKPOINT_NOT_FOUND, not an empty page; Bob naming Alice's checkpoint gets the answer an unknown one gets", async () => {
      const thread = await alice.threads.create();
      for (const content of ['one', 'two']) await alice.runs.wait(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content }] } });
      const history = (body: Json, token?: string, threadId = thread.thread_id) => server.request('POST', `/threads/${threadId}/history`, { body, ...(token ? { token } : {}) });
      // Checkpoints the thread has: what is before them, down to the empty thread (vigil-0, before which there is nothing).
      const counts = async (before: unknown) => ((await alice.threads.getHistory<{ messages: Json[] }>(thread.thread_id, { before: before as never })) as Json[]).map((state) => state.values.messages.length);
      expect(await counts({ configurable: { checkpoint_id: 'vigil-4' } })).toEqual([3, 2, 1, 0]);
      expect(await counts({ configurable: { checkpoint_id: 'vigil-2' } })).toEqual([1, 0]);
      expect((await history({ before: 'vigil-1' })).body.map((state: Json) => state.checkpoint.checkpoint_id)).toEqual(['vigil-0']);
      expect((await history({ before: 'vigil-0' })).body).toEqual([]);
      // Checkpoints it does not have, named as an id, a config or a checkpoint: refused, whatever the form.
      const unknown = ['vigil-5', 'vigil-99999', 'vigil-04', 'garbage', ''];
      for (const checkpoint of unknown) {
        for (const before of [checkpoint, { configurable: { checkpoint_id: checkpoint } }, { thread_id: thread.thread_id, checkpoint_ns: '', checkpoint_id: checkpoint }]) {
          const refused = await history({ before });
          expect([refused.status, refused.body.error?.code], JSON.stringify(before)).toEqual([404, 'CHECKPOINT_NOT_FOUND']);
        }
      }
      expect(await statusOf(alice.threads.getHistory(thread.thread_id, { before: { configurable: { checkpoint_id: 'vigil-5' } } }))).toBe(404);

      // Bob, on his own thread (one turn: vigil-0 to vigil-2), names Alice's vigil-4: as unknown as any.
      const bobs = await bob.threads.create();
      await bob.runs.wait(bobs.thread_id, 'agent', { input: { messages: [{ type: 'human', content: 'mine' }] } });
      const aliceCheckpoint = (await alice.threads.getState(thread.thread_id)).checkpoint.checkpoint_id;
      expect(aliceCheckpoint).toBe('vigil-4');
      const named = await history({ before: aliceCheckpoint }, BOB.token, bobs.thread_id);
      const unknownToBob = await history({ before: 'vigil-99999' }, BOB.token, bobs.thread_id);
      expect([named.status, named.body.error.code]).toEqual([404, 'CHECKPOINT_NOT_FOUND']);
      expect(named.body.error.message.replace(aliceCheckpoint, '<id>')).toBe(unknownToBob.body.error.message.replace('vigil-99999', '<id>'));
      // Bob on Alice's thread: not found, whether her checkpoint exists or not, as for a thread nobody has.
      const nobodys = randomUUID();
      const answers = await Promise.all([
        history({ before: aliceCheckpoint }, BOB.token),
        history({ before: 'vigil-99999' }, BOB.token),
        history({ before: aliceCheckpoint }, BOB.token, nobodys),
      ]);
      expect(answers.map((answer) => [answer.status, answer.body.error.code, answer.body.error.message.replace(nobodys, thread.thread_id)])).toEqual(
        Array(3).fill([404, 'THREAD_NOT_FOUND', `no thread "${thread.thread_id}"`]),
      );
      // Nothing was written by the refusals: Alice's history is as it was.
      expect((await history({})).body.map((state: Json) => state.checkpoint.checkpoint_id)).toEqual(['vigil-4', 'vigil-3', 'vigil-2', 'vigil-1', 'vigil-0']);
    });

    it('stream: metadata first, then every mode (values, updates, messages-tuple, messages, custom), each event with an id', async () => {
      const thread = await alice.threads.create();
      const events = await collect(
        alice.runs.stream(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content: 'stream me' }] }, streamMode: ['values', 'updates', 'messages-tuple', 'messages', 'custom'] }),
      );
      expect(events[0]!.event).toBe('metadata');
      expect(events.every((event) => event.id !== undefined && /^\d+$/.test(event.id))).toBe(true);
      const ids = events.map((event) => Number(event.id));
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
      const names = new Set(events.map((event) => event.event));
      for (const name of ['values', 'updates', 'messages', 'messages/partial', 'messages/complete', 'custom']) expect(names, name).toContain(name);
      const tuples = events.filter((event) => event.event === 'messages');
      expect(tuples.map((event) => event.data[0].content).join('')).toBe('Echo: stream me');
      expect(tuples[0]!.data[1]).toMatchObject({ run_id: expect.any(String), thread_id: thread.thread_id });
      const lastValues = events.filter((event) => event.event === 'values').at(-1)!;
      expect(lastValues.data.messages.map((message: Json) => message.content)).toEqual(['stream me', 'Echo: stream me']);
      const custom = events.filter((event) => event.event === 'custom').map((event) => event.data.vigil.type);
      expect(custom).toEqual(expect.arrayContaining(['run.start', 'run.end']));
      // events: as far as vigil's events map (the run's start and end, the model's tokens).
      const langchainEvents = await collect(alice.runs.stream(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content: 'events too' }] }, streamMode: 'events' }));
      const kinds = langchainEvents.filter((event) => event.event === 'events').map((event) => event.data.event);
      expect(kinds[0]).toBe('on_chain_start');
      expect(kinds.at(-1)).toBe('on_chain_end');
      expect(langchainEvents.filter((event) => event.data?.event === 'on_chat_model_stream').map((event) => event.data.data.chunk.content).join('')).toBe('Echo: events too');
      // Only the modes asked for.
      const valuesOnly = await collect(alice.runs.stream(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content: 'again' }] } }));
      expect(new Set(valuesOnly.map((event) => event.event))).toEqual(new Set(['metadata', 'values']));
    });

    it("a stream resumed with a Last-Event-ID that is not an event id is refused (400), as vigil's own events route refuses it; another user 404", async () => {
      const thread = await alice.threads.create();
      const run = await alice.runs.create(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content: 'resume me' }] } });
      await alice.runs.join(thread.thread_id, run.run_id);
      const path = `/threads/${thread.thread_id}/runs/${run.run_id}/stream`;
      for (const id of ['garbage', '-1', '1.5']) {
        const refused = await server.request('GET', path, { headers: { 'last-event-id': id } });
        expect([refused.status, refused.body.error?.code], id).toEqual([400, 'VALIDATION_FAILED']);
        expect((await server.request('GET', `/api/threads/${thread.thread_id}/events`, { headers: { 'last-event-id': id } })).status, id).toBe(400);
      }
      expect((await server.request('GET', path, { headers: { 'last-event-id': 'garbage' }, token: BOB.token })).status).toBe(404);
      const resumed = await server.request('GET', path, { headers: { 'last-event-id': '0' } });
      expect(resumed.status).toBe(200);
    });

    it('join, join stream, and reconnect with Last-Event-ID: no event lost, none repeated', async () => {
      const thread = await alice.threads.create();
      const run = await alice.runs.create(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content: 'slow [hold]' }] } });
      expect(['pending', 'running']).toContain(run.status);
      await waitFor(() => GatedModel.held.length > 0, 10_000, 'the run to reach the model');
      expect((await alice.runs.get(thread.thread_id, run.run_id)).status).toBe('running');
      expect((await alice.threads.get(thread.thread_id)).status).toBe('busy');
      const modes = ['values', 'messages-tuple', 'custom'] as const;
      const controller = new AbortController();
      const firstPart: Array<{ event: string; id?: string }> = [];
      // Read the stream so far, then drop the connection.
      for await (const part of alice.runs.joinStream(thread.thread_id, run.run_id, { streamMode: [...modes], signal: controller.signal })) {
        firstPart.push(part);
        if (part.event === 'messages') {
          controller.abort();
          break;
        }
      }
      const lastEventId = firstPart.at(-1)!.id!;
      const joined = alice.runs.join(thread.thread_id, run.run_id);
      const resumed = collect(alice.runs.joinStream(thread.thread_id, run.run_id, { streamMode: [...modes], lastEventId }));
      await release();
      const rest = await resumed;
      const values = (await joined) as Json;
      expect(values.messages.map((message: Json) => message.content)).toEqual(['slow [hold]', 'Echo: slow [hold]']);
      const whole = await collect(alice.runs.joinStream(thread.thread_id, run.run_id, { streamMode: [...modes] }));
      expect([...firstPart, ...rest].map((event) => event.id)).toEqual(whole.map((event) => event.id));
      expect(rest.every((event) => Number(event.id) > Number(lastEventId))).toBe(true);
      expect((await alice.runs.get(thread.thread_id, run.run_id)).status).toBe('success');
    });

    it('multitask: reject answers 409, enqueue waits its turn, interrupt cancels the run in progress, rollback is refused (I8)', async () => {
      const thread = await alice.threads.create();
      const first = await alice.runs.create(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content: 'first [hold]' }] } });
      await waitFor(() => GatedModel.held.length > 0, 10_000, 'the first run to reach the model');
      expect(await statusOf(alice.runs.create(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content: 'no' }] } }))).toBe(409);
      expect(await statusOf(alice.runs.create(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content: 'no' }] }, multitaskStrategy: 'rollback' }))).toBe(422);
      const queued = await alice.runs.create(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content: 'second' }] }, multitaskStrategy: 'enqueue' });
      expect(queued.status).toBe('pending');
      expect((await alice.runs.get(thread.thread_id, queued.run_id)).status).toBe('pending');
      await release();
      await alice.runs.join(thread.thread_id, queued.run_id);
      expect((await alice.runs.get(thread.thread_id, first.run_id)).status).toBe('success');
      expect((await alice.runs.get(thread.thread_id, queued.run_id)).status).toBe('success');

      const held = await alice.runs.create(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content: 'third [hold]' }] } });
      await waitFor(async () => (await alice.runs.get(thread.thread_id, held.run_id)).status === 'running', 10_000, 'the third run to start');
      const interrupting = await alice.runs.wait(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content: 'fourth' }] }, multitaskStrategy: 'interrupt' });
      expect((interrupting as Json).messages.at(-1).content).toBe('Echo: fourth');
      expect((await alice.runs.get(thread.thread_id, held.run_id)).status).toBe('interrupted');
      expect((await server.request('GET', `/api/runs/${held.run_id}`)).body.reason).toMatch(/^interrupted by a newer run/);
      GatedModel.held.splice(0);
    });

    it('a stream that waits sends heartbeats (comments the SDK skips) between events', async () => {
      // What the SDK hides: read the raw stream of a held run until a heartbeat shows.
      const thread = await alice.threads.create();
      const run = await alice.runs.create(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content: 'beat [hold]' }] } });
      await waitFor(() => GatedModel.held.length > 0, 10_000, 'the run to reach the model');
      const controller = new AbortController();
      const response = await fetch(`${server.url}/threads/${thread.thread_id}/runs/${run.run_id}/stream`, { headers: { 'x-api-key': ALICE.token }, signal: controller.signal });
      expect(response.headers.get('location')).toBe(`/threads/${thread.thread_id}/runs/${run.run_id}/stream`);
      const reader = response.body!.getReader();
      let text = '';
      while (!text.includes(': heartbeat')) text += new TextDecoder().decode((await reader.read()).value);
      controller.abort();
      expect(text).toMatch(/^event: metadata\ndata: .*\nid: 0\n/);
      await release();
      await alice.runs.join(thread.thread_id, run.run_id);
    });

    it('onDisconnect cancel: dropping the stream cancels the run', async () => {
      const thread = await alice.threads.create();
      const controller = new AbortController();
      let runId: string | undefined;
      const stream = alice.runs.stream(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content: 'drop me [hold]' }] }, streamMode: 'messages-tuple', onDisconnect: 'cancel', signal: controller.signal });
      for await (const part of stream) {
        if (part.event === 'metadata') runId = (part.data as Json).run_id;
        if (part.event === 'messages') break;
      }
      controller.abort();
      await waitFor(async () => (await alice.runs.get(thread.thread_id, runId!)).status === 'interrupted', 10_000, 'the run to be cancelled');
      expect((await server.request('GET', `/api/runs/${runId}`)).body).toMatchObject({ status: 'cancelled', reason: 'the client went away' });
      GatedModel.held.splice(0);
    });

    it('a thread with more than 100 runs lists each with its status on every page (limit and offset past 100); another user gets 404 (I12)', async () => {
      const thread = await alice.threads.create();
      const made: string[] = [];
      for (let index = 0; index < 103; index += 1) {
        await alice.runs.wait(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content: `turn ${index}` }] }, onRunCreated: (created) => void made.push(created.run_id) });
      }
      const all = await alice.runs.list(thread.thread_id, { limit: 200 });
      expect(all.map((run) => run.run_id)).toEqual([...made].reverse());
      expect(new Set(all.map((run) => run.status))).toEqual(new Set(['success']));
      const last = await alice.runs.list(thread.thread_id, { limit: 10, offset: 100 });
      expect(last.map((run) => [run.run_id, run.status])).toEqual(made.slice(0, 3).reverse().map((runId) => [runId, 'success']));
      expect(await statusOf(bob.runs.list(thread.thread_id, { limit: 10, offset: 100 }))).toBe(404);
    }, 120_000);

    it('cancel a run in progress; another user cannot', async () => {
      const thread = await alice.threads.create();
      const run = await alice.runs.create(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content: 'cancel me [hold]' }] } });
      await waitFor(async () => (await alice.runs.get(thread.thread_id, run.run_id)).status === 'running', 10_000, 'the run to start');
      expect(await statusOf(bob.runs.cancel(thread.thread_id, run.run_id))).toBe(404);
      await alice.runs.cancel(thread.thread_id, run.run_id, true);
      expect((await alice.runs.get(thread.thread_id, run.run_id)).status).toBe('interrupted');
      // vigil's record of it says it was cancelled, not that its client went away.
      expect((await server.request('GET', `/api/runs/${run.run_id}`)).body).toMatchObject({ status: 'cancelled', reason: 'the run was cancelled' });
      GatedModel.held.splice(0);
    });

    it('stateless runs: wait and stream on a thread that goes away when they end', async () => {
      const values = (await alice.runs.wait(null, 'agent', { input: { messages: [{ type: 'human', content: 'no thread' }] } })) as Json;
      expect(values.messages.at(-1).content).toBe('Echo: no thread');
      const events = await collect(alice.runs.stream(null, 'agent', { input: { messages: [{ type: 'human', content: 'streamed' }] }, streamMode: 'values' }));
      const threadId = events[0]!.data.thread_id as string;
      expect(events.at(-1)!.data.messages.at(-1).content).toBe('Echo: streamed');
      await waitFor(async () => (await statusOf(alice.threads.get(threadId))) === 404, 10_000, 'the stateless thread to be deleted');
    });

    it('options vigil cannot honour are refused with 422, never ignored', async () => {
      const thread = await alice.threads.create();
      const input = { messages: [{ type: 'human', content: 'x' }] };
      expect(await statusOf(alice.runs.wait(thread.thread_id, 'agent', { input, config: { configurable: { temperature: 0 } } }))).toBe(422);
      expect(await statusOf(alice.runs.wait(thread.thread_id, 'agent', { command: { resume: 'yes' } }))).toBe(422);
      expect(await statusOf(alice.runs.wait(thread.thread_id, 'agent', { input, interruptBefore: ['agent'] }))).toBe(422);
      expect(await statusOf(alice.runs.wait(thread.thread_id, 'agent', { input, afterSeconds: 5 }))).toBe(422);
      expect(await statusOf(alice.runs.create(thread.thread_id, 'agent', { input, streamMode: 'debug' }))).toBe(422);
      expect(await statusOf(alice.runs.create(thread.thread_id, 'agent', { input, streamMode: ['values', 'tools'] }))).toBe(422);
      expect(await statusOf(alice.runs.wait(thread.thread_id, 'agent', { input, checkpoint: { checkpoint_id: 'vigil-5', checkpoint_ns: '', checkpoint_map: null } }))).toBe(422);
      expect(await statusOf(alice.runs.wait(thread.thread_id, 'agent', { input: { messages: [{ type: 'ai', content: 'forged' }] } }))).toBe(400);
      expect(await statusOf(alice.threads.updateState(thread.thread_id, { values: { messages: [] } }))).toBe(422);
      expect((await alice.threads.getState<{ messages: Json[] }>(thread.thread_id)).values.messages).toEqual([]);
      // if_not_exists=create makes the thread the run names.
      const fresh = randomUUID();
      await alice.runs.wait(fresh, 'agent', { input, ifNotExists: 'create' });
      expect((await alice.threads.get(fresh)).status).toBe('idle');
    });

    it('I16: a tool call waiting for approval is an interrupt; command.resume.decisions approves it and the run continues', async () => {
      const assistant = await alice.assistants.create({ graphId: 'chat', name: 'Careful' });
      await server.services.agents.updateSetting(ALICE.id, assistant.assistant_id, 'tools', { approval: { memory_write: { attended: 'ask' } } });
      const thread = await alice.threads.create();
      const events = await collect(
        alice.runs.stream(thread.thread_id, assistant.assistant_id, { input: { messages: [{ type: 'human', content: 'note this [remember:likes green tea]' }] }, streamMode: ['values', 'updates', 'custom'] }),
      );
      const interrupted = events.filter((event) => event.event === 'values').at(-1)!.data;
      expect(interrupted.__interrupt__[0].value.action_requests).toEqual([{ name: 'memory_write', args: { content: 'likes green tea' }, description: expect.any(String) }]);
      expect(events.some((event) => event.event === 'updates' && '__interrupt__' in event.data)).toBe(true);
      expect(events.filter((event) => event.event === 'custom').map((event) => event.data.vigil.type)).toContain('approval.requested');
      const waiting = await alice.threads.get(thread.thread_id);
      expect(waiting.status).toBe('interrupted');
      expect(Object.values(waiting.interrupts ?? {}).flat()).toHaveLength(1);
      const state = await alice.threads.getState<Json>(thread.thread_id);
      expect(state.next).toEqual(['agent']);
      expect(state.tasks[0]!.interrupts).toHaveLength(1);
      expect((await alice.runs.list(thread.thread_id))[0]!.status).toBe('interrupted');
      expect(await server.services.memories.list(ALICE.id, assistant.assistant_id, 10)).toEqual([]);
      // Silence is not consent, and nobody else may decide (I12).
      expect(await statusOf(bob.runs.wait(thread.thread_id, assistant.assistant_id, { command: { resume: { decisions: [{ type: 'approve' }] } } }))).toBe(404);
      expect(await statusOf(alice.runs.wait(thread.thread_id, assistant.assistant_id, { command: { resume: { decisions: [{ type: 'approve' }, { type: 'approve' }] } } }))).toBe(400);
      expect(await statusOf(alice.runs.wait(thread.thread_id, assistant.assistant_id, { command: { goto: 'agent' } }))).toBe(422);

      const resumed = await collect(alice.runs.stream(thread.thread_id, assistant.assistant_id, { command: { resume: { decisions: [{ type: 'approve' }] } }, streamMode: 'values' }));
      const final = resumed.filter((event) => event.event === 'values').at(-1)!.data;
      expect(final.__interrupt__).toBeUndefined();
      expect(final.messages.at(-1)).toMatchObject({ type: 'ai', content: expect.stringContaining('Done:') });
      expect((await server.services.memories.list(ALICE.id, assistant.assistant_id, 10)).map((memory) => memory.content)).toEqual(['likes green tea']);
      expect((await alice.threads.get(thread.thread_id)).status).toBe('idle');
      const resumeRun = resumed[0]!.data.run_id as string;
      expect((await alice.runs.get(thread.thread_id, resumeRun)).status).toBe('success');
      expect(await statusOf(alice.runs.wait(thread.thread_id, assistant.assistant_id, { command: { resume: { decisions: [{ type: 'approve' }] } } }))).toBe(422);
    });

    it('I11, I16: a resume whose later decision is refused records none of them: every waiting call stays pending', async () => {
      const assistant = await alice.assistants.create({ graphId: 'chat', name: 'Careful twice' });
      await server.services.agents.updateSetting(ALICE.id, assistant.assistant_id, 'tools', { approval: { memory_write: { attended: 'ask' } } });
      const thread = await alice.threads.create();
      await collect(alice.runs.stream(thread.thread_id, assistant.assistant_id, { input: { messages: [{ type: 'human', content: 'note [remember:likes tea] and [remember:likes jam]' }] }, streamMode: 'values' }));
      const pendingOf = async () => (await server.request('GET', `/api/approvals?threadId=${thread.thread_id}`)).body.approvals.map((approval: Json) => approval.status);
      expect(await pendingOf()).toEqual(['pending', 'pending']);
      // The first decision is fine, the second's arguments do not fit memory_write: 400, and nothing is recorded.
      const refused = alice.runs.wait(thread.thread_id, assistant.assistant_id, { command: { resume: { decisions: [{ type: 'approve' }, { type: 'edit', edited_action: { name: 'memory_write', args: { content: 42 } } }] } } });
      expect(await statusOf(refused)).toBe(400);
      expect(await pendingOf()).toEqual(['pending', 'pending']);
      expect((await alice.threads.get(thread.thread_id)).status).toBe('interrupted');
      expect(await server.services.memories.list(ALICE.id, assistant.assistant_id, 10)).toEqual([]);
      // Both decided together, the run goes on with both calls run.
      const resumed = (await alice.runs.wait(thread.thread_id, assistant.assistant_id, { command: { resume: { decisions: [{ type: 'approve' }, { type: 'edit', edited_action: { name: 'memory_write', args: { content: 'likes marmalade' } } }] } } })) as Json;
      expect(resumed.__interrupt__).toBeUndefined();
      expect(await pendingOf()).toEqual(expect.arrayContaining(['approved', 'edited']));
      expect((await server.services.memories.list(ALICE.id, assistant.assistant_id, 10)).map((memory) => memory.content).sort()).toEqual(['likes marmalade', 'likes tea']);
    });

    it('I16: a resume whose continuing run fails is an error to runs.wait (__error__, the SDK throws), as a failed run is; the run says error', async () => {
      const assistant = await alice.assistants.create({ graphId: 'chat', name: 'Careful, failing' });
      await server.services.agents.updateSetting(ALICE.id, assistant.assistant_id, 'tools', { approval: { memory_write: { attended: 'ask' } } });
      const thread = await alice.threads.create();
      const waiting = (await alice.runs.wait(thread.thread_id, assistant.assistant_id, { input: { messages: [{ type: 'human', content: 'note [remember:likes figs] [fail]' }] } })) as Json;
      expect(waiting.__interrupt__).toHaveLength(1);
      // Another user can neither resume it nor see it (I12).
      expect(await statusOf(bob.runs.wait(thread.thread_id, assistant.assistant_id, { command: { resume: { decisions: [{ type: 'approve' }] } } }))).toBe(404);
      let runId: string | undefined;
      const resumed = alice.runs.wait(thread.thread_id, assistant.assistant_id, { command: { resume: { decisions: [{ type: 'approve' }] } }, onRunCreated: (created) => (runId = created.run_id) });
      await expect(resumed).rejects.toThrow(/MODEL_ERROR/);
      // The approved call ran once before the model failed; the run that continued the thread failed, and its protocol run says so.
      expect((await server.services.memories.list(ALICE.id, assistant.assistant_id, 10)).map((memory) => memory.content)).toEqual(['likes figs']);
      expect((await alice.runs.get(thread.thread_id, runId!)).status).toBe('error');
      expect(await statusOf(bob.runs.get(thread.thread_id, runId!))).toBe(404);
      // Without raiseError the values come with the error, as LangGraph's wait answers them.
      const again = await alice.threads.create();
      await alice.runs.wait(again.thread_id, assistant.assistant_id, { input: { messages: [{ type: 'human', content: 'note [remember:likes kiwis] [fail]' }] } });
      const answered = (await alice.runs.wait(again.thread_id, assistant.assistant_id, { command: { resume: { decisions: [{ type: 'reject' }] } }, raiseError: false })) as Json;
      expect(answered.__error__).toMatchObject({ error: 'MODEL_ERROR', message: expect.any(String) });
      expect(answered.messages.at(-1)).toMatchObject({ type: 'ai' });
    });

    it('I16: a resume cancelled before the run that carries out its decisions starts is refused (409 RUN_NOT_CANCELLABLE), never answered interrupted while the approved call runs; the run goes on and says so; another user 404', async () => {
      const { assistant, thread, decided } = await waitingResume('Careful, cancelled', 'note [remember:likes quinces]');
      const restore = delayResumes(1_500);
      let runId: string;
      try {
        runId = (await alice.runs.create(thread.thread_id, assistant.assistant_id, { command: { resume: { decisions: [{ type: 'approve' }] } } })).run_id;
        await waitFor(decided, 10_000, 'the decisions recorded');
        expect(await statusOf(bob.runs.cancel(thread.thread_id, runId))).toBe(404);
        const refused = await server.request('POST', `/threads/${thread.thread_id}/runs/${runId}/cancel?wait=1`);
        expect(refused.status, JSON.stringify(refused.body)).toBe(409);
        expect(refused.body.error.code).toBe('RUN_NOT_CANCELLABLE');
        expect((await alice.runs.get(thread.thread_id, runId)).status).toBe('pending');
      } finally {
        restore();
      }
      // The decision stands: the approved call runs once, and the run that carried it out is this run's end.
      const joined = (await alice.runs.join(thread.thread_id, runId)) as Json;
      expect(joined.messages.at(-1)).toMatchObject({ type: 'ai', content: expect.stringContaining('Done:') });
      expect((await alice.runs.get(thread.thread_id, runId)).status).toBe('success');
      expect((await server.services.memories.list(ALICE.id, assistant.assistant_id, 10)).map((memory) => memory.content)).toEqual(['likes quinces']);
      expect((await alice.threads.get(thread.thread_id)).status).toBe('idle');
    });

    it('I16: a resume whose run starts only after the wait for it timed out (the job late) follows that run to its end: wait answers its values and the run says success, not error', { timeout: 60_000 }, async () => {
      // A server that waits 500 ms for a resume's run before asking what became of its decisions.
      const quick = await startTestServer(backend(), { models: () => new GatedModel({}), langgraph: { heartbeatMs: 50, resumeStartMs: 500 } });
      try {
        const client = new Client({ apiUrl: quick.url, apiKey: ALICE.token, callerOptions: { maxRetries: 0 } });
        const assistant = await client.assistants.create({ graphId: 'chat', name: 'Careful, late' });
        await quick.services.agents.updateSetting(ALICE.id, assistant.assistant_id, 'tools', { approval: { memory_write: { attended: 'ask' } } });
        const thread = await client.threads.create();
        const waiting = (await client.runs.wait(thread.thread_id, assistant.assistant_id, { input: { messages: [{ type: 'human', content: 'note [remember:likes apricots]' }] } })) as Json;
        expect(waiting.__interrupt__).toHaveLength(1);
        // The resume job comes 2.5 s after the decisions (a busy queue, a thread held by another run): five waits' worth.
        const jobs = quick.services.jobs;
        const schedule = jobs.schedule;
        jobs.schedule = async (job, options) => schedule.call(jobs, job.queue === APPROVAL_RESUME_QUEUE ? { ...job, dueAt: new Date(job.dueAt.getTime() + 2_500) } : job, options);
        let runId = '';
        const resumed = (await client.runs.wait(thread.thread_id, assistant.assistant_id, { command: { resume: { decisions: [{ type: 'approve' }] } }, raiseError: false, onRunCreated: (created) => (runId = created.run_id) })) as Json;
        jobs.schedule = schedule;
        // It used to end `error` (RESUME_NOT_STARTED) at the first timeout, and stayed so once the run came and succeeded.
        expect(resumed.__error__).toBeUndefined();
        expect(resumed.messages.at(-1)).toMatchObject({ type: 'ai', content: expect.stringContaining('Done:') });
        expect(await client.runs.get(thread.thread_id, runId)).toMatchObject({ status: 'success' });
        expect((await client.runs.list(thread.thread_id)).find((listed) => listed.run_id === runId)?.status).toBe('success');
        expect((await quick.services.memories.list(ALICE.id, assistant.assistant_id, 10)).map((memory) => memory.content)).toEqual(['likes apricots']);
        expect((await client.threads.get(thread.thread_id)).status).toBe('idle');
      } finally {
        await quick.destroy();
      }
    });

    it("a thread whose last run failed is `error` to get, search and count (the status filter too), until a run succeeds; another user sees none of it (I12)", async () => {
      const tag = randomUUID();
      const { assistant, thread } = await waitingResume('Careful, erring', 'note [remember:likes dates] [fail]', { tag });
      expect((await alice.threads.get(thread.thread_id)).status).toBe('interrupted');
      // The run that continues the thread after the rejection fails (the model refuses the call).
      const failed = (await alice.runs.wait(thread.thread_id, assistant.assistant_id, { command: { resume: { decisions: [{ type: 'reject' }] } }, raiseError: false })) as Json;
      expect(failed.__error__).toMatchObject({ error: 'MODEL_ERROR' });
      expect((await alice.threads.get(thread.thread_id)).status).toBe('error');
      expect((await alice.threads.search({ metadata: { tag }, status: 'error' })).map((found) => found.thread_id)).toEqual([thread.thread_id]);
      expect((await alice.threads.search({ metadata: { tag } }))[0]!.status).toBe('error');
      expect(await alice.threads.search({ metadata: { tag }, status: 'idle' })).toEqual([]);
      expect(await alice.threads.count({ metadata: { tag }, status: 'error' })).toBe(1);
      expect(await alice.threads.count({ metadata: { tag }, status: 'idle' })).toBe(0);
      // Another user: not found, not searched, not counted (I12).
      expect(await statusOf(bob.threads.get(thread.thread_id))).toBe(404);
      expect((await bob.threads.search({ status: 'error', limit: 1000 })).map((found) => found.thread_id)).not.toContain(thread.thread_id);
      expect(await bob.threads.count({ metadata: { tag }, status: 'error' })).toBe(0);
      // The next run succeeds: the thread is idle again.
      await alice.runs.wait(thread.thread_id, assistant.assistant_id, { input: { messages: [{ type: 'human', content: 'and now?' }] } });
      expect((await alice.threads.get(thread.thread_id)).status).toBe('idle');
      expect(await alice.threads.count({ metadata: { tag }, status: 'error' })).toBe(0);
      expect(await alice.threads.count({ metadata: { tag }, status: 'idle' })).toBe(1);
    });

    it('threads.search and count read the status of a page of threads in one query, and it is still right: idle, interrupted, error after a failed run and after a run that never started; another user sees none of it (I12)', { timeout: 60_000 }, async () => {
      const tag = randomUUID();
      const idle: string[] = [];
      for (let index = 0; index < 12; index++) {
        const thread = await alice.threads.create({ metadata: { tag } });
        await alice.runs.wait(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content: `turn ${index}` }] } });
        idle.push(thread.thread_id);
      }
      const { thread: waiting } = await waitingResume('Careful, counted', 'note [remember:likes melons]', { tag });
      // Its last run failed (the model refused the call after a rejection).
      const { assistant, thread: failed } = await waitingResume('Careful, counted and failing', 'note [remember:likes cress] [fail]', { tag });
      await alice.runs.wait(failed.thread_id, assistant.assistant_id, { command: { resume: { decisions: [{ type: 'reject' }] } }, raiseError: false });
      // Its last run never started (its server went away while it was queued); an earlier run succeeded.
      const unstarted = await alice.threads.create({ metadata: { tag } });
      await alice.runs.wait(unstarted.thread_id, 'agent', { input: { messages: [{ type: 'human', content: 'before' }] } });
      const orphan = randomUUID();
      await new SqlProtocolStore((server.storage as SqlStorage).context).createRun(newRunRecord({ runId: orphan, userId: ALICE.id, threadId: unstarted.thread_id, agentId: 'agent', metadata: {}, multitaskStrategy: 'enqueue', owner: randomUUID() }));
      expect((await alice.runs.get(unstarted.thread_id, orphan)).status).toBe('error');

      // Every statement the server sends that reads protocol runs, while searching and counting.
      const executor = (server.storage as SqlStorage).context.db.getExecutor();
      const execute = executor.executeQuery.bind(executor);
      let reads = 0;
      executor.executeQuery = (async (query: Parameters<typeof execute>[0], ...rest: unknown[]) => {
        if (query.sql.includes('protocol_runs')) reads += 1;
        return (execute as (...args: unknown[]) => unknown)(query, ...rest);
      }) as typeof executor.executeQuery;
      let found: Json[];
      let counts: number[];
      try {
        found = await alice.threads.search({ metadata: { tag }, limit: 100 });
        counts = [await alice.threads.count({ metadata: { tag }, status: 'error' }), await alice.threads.count({ metadata: { tag }, status: 'idle' }), await alice.threads.count({ metadata: { tag }, status: 'interrupted' })];
        expect((await alice.threads.search({ metadata: { tag }, status: 'error', sortBy: 'thread_id', sortOrder: 'asc' })).map((thread) => thread.thread_id)).toEqual([failed.thread_id, unstarted.thread_id].sort());
      } finally {
        executor.executeQuery = execute;
      }
      // 15 threads: one read for the search's page, one per count, one for the filtered search (it was three per thread).
      expect(reads).toBeLessThanOrEqual(5);
      const statuses = new Map(found.map((thread) => [thread.thread_id, thread.status]));
      expect(statuses.size).toBe(15);
      for (const threadId of idle) expect(statuses.get(threadId)).toBe('idle');
      expect([statuses.get(waiting.thread_id), statuses.get(failed.thread_id), statuses.get(unstarted.thread_id)]).toEqual(['interrupted', 'error', 'error']);
      expect(counts).toEqual([2, 12, 1]);
      expect((await alice.threads.get(unstarted.thread_id)).status).toBe('error');
      // Another user: nothing found, nothing counted (I12).
      expect(await bob.threads.search({ metadata: { tag } })).toEqual([]);
      expect(await bob.threads.count({ metadata: { tag }, status: 'error' })).toBe(0);
    });

    it("useStream's calls: create thread, stream messages-tuple + values, history on reload, join a running stream", async () => {
      const thread = await alice.threads.create();
      const events = await collect(
        alice.runs.stream(thread.thread_id, 'agent', {
          input: { messages: [{ type: 'human', content: 'hi ui', id: randomUUID() }] },
          streamMode: ['values', 'messages-tuple'],
          streamResumable: true,
          onDisconnect: 'continue',
        }),
      );
      expect(events.some((event) => event.event === 'messages')).toBe(true);
      const history = await alice.threads.getHistory<{ messages: Json[] }>(thread.thread_id, { limit: 10 });
      expect(history[0]!.values.messages.map((message) => message.content)).toEqual(['hi ui', 'Echo: hi ui']);
      // The hook may name the state it shows (the head of history): that is where the run starts.
      const named = (await alice.runs.wait(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content: 'from head' }] }, checkpoint: history[0]!.checkpoint })) as Json;
      expect(named.messages.at(-1).content).toBe('Echo: from head');
      // A reload while a run is in progress: the hook joins its stream.
      const run = await alice.runs.create(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content: 'later [hold]' }] }, streamMode: ['values', 'messages-tuple'], streamResumable: true });
      const joined = collect(alice.runs.joinStream(thread.thread_id, run.run_id, { streamMode: ['values', 'messages-tuple'] }));
      await release();
      const joinedEvents = await joined;
      expect(joinedEvents.at(-1)!.data.messages.at(-1).content).toBe('Echo: later [hold]');
    });
  });

  describe('after a restart', () => {
    it('thread metadata and protocol runs are stored; joining a finished run answers its final values', async () => {
      const thread = await alice.threads.create({ metadata: { kept: 'yes' } });
      const run = await alice.runs.create(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content: 'before restart' }] }, metadata: { origin: 'sdk' } });
      await alice.runs.join(thread.thread_id, run.run_id);
      // What a client read of its stream before the restart: up to the first values.
      const before = await collect(alice.runs.joinStream(thread.thread_id, run.run_id, { streamMode: 'values' }));
      const readUpTo = before.find((event) => event.event === 'values')!.id!;
      expect(Number(readUpTo)).toBeGreaterThan(1);
      // The first server's responses are all ones the API document declares.
      expect(server.undocumented).toEqual([]);
      server = await server.restart();
      alice = new Client({ apiUrl: server.url, apiKey: ALICE.token, callerOptions: { maxRetries: 0 } });
      expect((await alice.threads.get(thread.thread_id)).metadata).toMatchObject({ kept: 'yes' });
      expect(await alice.runs.get(thread.thread_id, run.run_id)).toMatchObject({ status: 'success', metadata: { origin: 'sdk' } });
      // Its stream as far as it can be rebuilt (PostgreSQL keeps the thread's events; this
      // process's memory does not), ending with its final values.
      const events = await collect(alice.runs.joinStream(thread.thread_id, run.run_id, { streamMode: 'values' }));
      expect(events[0]!.event).toBe('metadata');
      expect(events.at(-1)!.event).toBe('values');
      expect(events.at(-1)!.data.messages.map((message: Json) => message.content)).toEqual(['before restart', 'Echo: before restart']);
      // A client resuming it with the id it read before the restart gets the final values too, numbered after that id.
      const resumed = await collect(alice.runs.joinStream(thread.thread_id, run.run_id, { streamMode: 'values', lastEventId: readUpTo }));
      expect(resumed.length).toBeGreaterThan(0);
      expect(resumed.every((event) => Number(event.id) > Number(readUpTo))).toBe(true);
      expect(resumed.at(-1)!.data.messages.map((message: Json) => message.content)).toEqual(['before restart', 'Echo: before restart']);
    });

    it('I16: a resume whose server stopped between its decisions and the start of their run ends as what happened: join answers once that run ended after the restart, runs.get says success; another user 404', { timeout: 60_000 }, async () => {
      const { assistant, thread, decided } = await waitingResume('Careful across a restart', 'note [remember:likes plums]');
      // The resume job comes 3 s after the decisions; the server stops before that.
      delayResumes(3_000);
      const run = await alice.runs.create(thread.thread_id, assistant.assistant_id, { command: { resume: { decisions: [{ type: 'approve' }] } } });
      await waitFor(decided, 10_000, 'the decisions recorded');
      expect((await alice.runs.get(thread.thread_id, run.run_id)).status).toBe('pending');
      server = await server.restart();
      alice = new Client({ apiUrl: server.url, apiKey: ALICE.token, callerOptions: { maxRetries: 0 } });
      bob = new Client({ apiUrl: server.url, apiKey: null, defaultHeaders: { Authorization: `Bearer ${BOB.token}` }, callerOptions: { maxRetries: 0 } });
      // Without an owner the record stayed pending for ever and join never answered.
      const joined = (await alice.runs.join(thread.thread_id, run.run_id)) as Json;
      expect(joined.messages.at(-1)).toMatchObject({ type: 'ai', content: expect.stringContaining('Done:') });
      expect((await alice.runs.get(thread.thread_id, run.run_id)).status).toBe('success');
      expect((await alice.runs.list(thread.thread_id)).find((listed) => listed.run_id === run.run_id)?.status).toBe('success');
      const streamed = await collect(alice.runs.joinStream(thread.thread_id, run.run_id, { streamMode: 'values' }));
      expect(streamed.at(-1)!.data.messages.at(-1)).toMatchObject({ type: 'ai', content: expect.stringContaining('Done:') });
      // The approved call ran once, after the restart.
      expect((await server.services.memories.list(ALICE.id, assistant.assistant_id, 10)).map((memory) => memory.content)).toEqual(['likes plums']);
      expect(await statusOf(bob.runs.get(thread.thread_id, run.run_id))).toBe(404);
      expect(await statusOf(bob.runs.join(thread.thread_id, run.run_id))).toBe(404);
    });

    it("a person's run whose server is gone before it started ends as error RUN_NOT_STARTED, not pending for ever: queued, or claimed with no run recorded; claimed with its run recorded, it is that run; another user 404", async () => {
      const thread = await alice.threads.create();
      const store = new SqlProtocolStore((server.storage as SqlStorage).context);
      // What a process that died left: a run queued behind another, and one that had just claimed its thread.
      const gone = randomUUID();
      const row = (runId: string) => newRunRecord({ runId, userId: ALICE.id, threadId: thread.thread_id, agentId: 'agent', metadata: { origin: 'sdk' }, multitaskStrategy: 'enqueue', owner: gone });
      const [queued, claimed, recorded] = [randomUUID(), randomUUID(), randomUUID()];
      await store.createRun(row(queued));
      await store.createRun({ ...row(claimed), state: 'claimed' });
      // The third's owner wrote vigil's run record before it died (its run went on to its end here).
      await server.services.conversations.sendMessage(ALICE.id, thread.thread_id, 'recorded before the end', { runId: recorded });
      await store.createRun({ ...row(recorded), state: 'claimed' });
      expect(await statusOf(bob.runs.get(thread.thread_id, queued))).toBe(404);
      expect(await statusOf(bob.runs.join(thread.thread_id, queued))).toBe(404);
      await alice.runs.join(thread.thread_id, queued);
      for (const runId of [queued, claimed]) {
        const ended = await alice.runs.get(thread.thread_id, runId);
        expect(ended.status).toBe('error');
        expect(ended.metadata).toMatchObject({ origin: 'sdk', vigil: { error: { code: 'RUN_NOT_STARTED' } } });
      }
      expect((await alice.runs.get(thread.thread_id, recorded)).status).toBe('success');
      expect((await store.getRun(ALICE.id, recorded))?.state).toBe('started');
      const listed = new Map((await alice.runs.list(thread.thread_id)).map((run) => [run.run_id, run.status]));
      expect([queued, claimed, recorded].map((runId) => listed.get(runId))).toEqual(['error', 'error', 'success']);
    });

    it("a queued run ended by another process's verdict (its owner taken for gone) never starts when its owner gets the thread after all: its message is not added, and its stream says why", async () => {
      const thread = await alice.threads.create();
      const held = await alice.runs.create(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content: 'in front [hold]' }] } });
      await waitFor(() => GatedModel.held.length > 0, 10_000, 'the run in front to reach the model');
      const queued = await alice.runs.create(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content: 'queued' }] }, multitaskStrategy: 'enqueue' });
      const streamed = collect(alice.runs.joinStream(thread.thread_id, queued.run_id, { streamMode: ['values'] }));
      // Another process judged this one gone (its presence connection broke for a moment) and ended the run.
      const store = new SqlProtocolStore((server.storage as SqlStorage).context);
      expect(await store.moveRun(queued.run_id, 'pending', 'failed', { code: 'RUN_NOT_STARTED', message: 'its server was taken for gone' })).toBe(true);
      await release();
      await alice.runs.join(thread.thread_id, held.run_id);
      expect((await streamed).at(-1)).toMatchObject({ event: 'error', data: { error: 'RUN_NOT_STARTED', message: 'its server was taken for gone' } });
      expect(await alice.runs.get(thread.thread_id, queued.run_id)).toMatchObject({ status: 'error', metadata: { vigil: { error: { code: 'RUN_NOT_STARTED' } } } });
      const state = await alice.threads.getState(thread.thread_id);
      expect((state.values as Json).messages.map((message: Json) => message.content)).toEqual(['in front [hold]', 'Echo: in front [hold]']);
    });

    it('a resume whose decisions were never recorded before its server stopped ends as error with the reason, not pending for ever; another user 404', async () => {
      const { assistant, thread } = await waitingResume('Careful, undecided', 'note [remember:likes limes]');
      // The interrupt's id is its step's: the model message whose call waits.
      const [step] = Object.keys((await alice.threads.get(thread.thread_id)).interrupts ?? {});
      // What a process that died right after writing the resume's record, before its decisions, left.
      const runId = randomUUID();
      const store = new SqlProtocolStore((server.storage as SqlStorage).context);
      await store.createRun({ ...newRunRecord({ runId, userId: ALICE.id, threadId: thread.thread_id, agentId: assistant.assistant_id, metadata: {}, multitaskStrategy: 'reject', resumeStep: step! }), createdAt: new Date(Date.now() - 120_000).toISOString() });
      expect(await statusOf(bob.runs.join(thread.thread_id, runId))).toBe(404);
      const joined = (await alice.runs.join(thread.thread_id, runId)) as Json;
      expect(joined.__interrupt__).toHaveLength(1);
      const ended = await alice.runs.get(thread.thread_id, runId);
      expect(ended.status).toBe('error');
      expect((ended.metadata as Json).vigil.error).toMatchObject({ code: 'RESUME_NOT_STARTED', message: expect.stringContaining('before the decisions were recorded') });
      expect(await statusOf(bob.runs.get(thread.thread_id, runId))).toBe(404);
      // The call still waits for a decision.
      expect((await alice.threads.get(thread.thread_id)).status).toBe('interrupted');
    });
  });
}
