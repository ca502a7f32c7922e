import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HumanMessage } from '@langchain/core/messages';
import { FakeStreamingChatModel } from '@langchain/core/utils/testing';
import { syntheticMetadata, TRIGGER_PROMPTS } from '../../src/domain/message-metadata.js';
import { ALICE, BOB, parseSse, startTestServer, type Backend, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';

/** The HTTP API, run against each storage backend by the *.test.ts files beside this one. */
export function httpApiSuite(backend: () => Backend): void {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer(backend());
  });
  afterAll(async () => {
    await server?.destroy();
  });

  async function newThread(token = ALICE.token, body: Record<string, unknown> = {}) {
    const response = await server.request('POST', '/api/threads', { token, body });
    expect(response.status).toBe(201);
    return response.body as { id: string; agentId: string };
  }

  async function say(threadId: string, content: unknown, token = ALICE.token) {
    const response = await server.request('POST', `/api/threads/${threadId}/messages`, { token, body: { content } });
    expect(response.status).toBe(200);
    return response.body;
  }

  /** A follow-up through the same run path timers will use: a synthetic message with metadata. */
  async function followUp(threadId: string, userId = ALICE.id) {
    const input = new HumanMessage({ content: TRIGGER_PROMPTS.question_unanswered, additional_kwargs: syntheticMetadata('question_unanswered', 'test: silence') });
    return server.services.conversations.runTriggered(userId, threadId, { trigger: 'autonomy', input });
  }

  describe('health and documents', () => {
    it('answers /healthz and /readyz, naming the demo model', async () => {
      expect((await server.request('GET', '/healthz', { token: '' })).body).toEqual({ status: 'ok' });
      const ready = await server.request('GET', '/readyz', { token: '' });
      expect(ready.status).toBe(200);
      expect(ready.body).toMatchObject({ status: 'ready', model: 'vigil-demo', demo: true, storage: backend().kind });
    });

    it('serves an OpenAPI document listing the routes', async () => {
      const response = await server.request('GET', '/api/openapi.json', { token: '' });
      expect(response.status).toBe(200);
      expect(response.body.openapi).toMatch(/^3\./);
      for (const path of ['/api/agents', '/api/threads', '/api/threads/{threadId}/history', '/api/threads/{threadId}/messages']) expect(response.body.paths).toHaveProperty([path]);
    });
  });

  describe('a conversation', () => {
    it('creates a thread on the default agent, answers in JSON with the demo label', async () => {
      const thread = await newThread();
      expect(thread.agentId).toBe('default');
      const answer = await say(thread.id, 'Hello there');
      expect(answer.run).toMatchObject({ status: 'succeeded', trigger: 'user', model: 'vigil-demo' });
      expect(answer.messages.map((message: { role: string }) => message.role)).toEqual(['user', 'assistant']);
      expect(answer.messages[1].content).toContain('[demo model]');
      expect(answer.messages[1].metadata).toMatchObject({ model: 'vigil-demo', demo: true, runId: answer.run.id });
      const runs = await server.request('GET', `/api/threads/${thread.id}/runs`);
      expect(runs.body.runs).toHaveLength(1);
      expect(runs.body.runs[0]).toMatchObject({ id: answer.run.id, status: 'succeeded', trigger: 'user' });
      expect(runs.body.runs[0].endedAt).not.toBeNull();
    });

    it('streams the reply as server-sent events, ending with run.end', async () => {
      const thread = await newThread();
      const response = await fetch(`${server.url}/api/threads/${thread.id}/messages`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ALICE.token}`, 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify({ content: 'Stream please' }),
      });
      expect(response.headers.get('content-type')).toContain('text/event-stream');
      const events = parseSse(await response.text());
      const types = events.map((event) => event.event);
      expect(types[0]).toBe('run.start');
      expect(types.at(-1)).toBe('run.end');
      expect(types.filter((type) => type === 'message.delta').length).toBeGreaterThan(2);
      const ends = events.filter((event) => event.event === 'message.end').map((event) => event.data.message);
      expect(ends.map((message) => message.role)).toEqual(['user', 'assistant']);
      const streamed = events.filter((event) => event.event === 'message.delta').map((event) => event.data.delta).join('');
      expect(streamed).toBe(ends[1].content);
      expect(events.at(-1)?.data.status).toBe('succeeded');
    });

    it('accepts multimodal content and stores it as sent', async () => {
      const thread = await newThread();
      const content = [{ type: 'text', text: 'what is this?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }];
      await say(thread.id, content);
      const history = await server.request('GET', `/api/threads/${thread.id}/history`);
      expect(history.body.messages[0].content).toEqual(content);
      const list = await server.request('GET', '/api/threads');
      expect(list.body.threads.find((item: { id: string }) => item.id === thread.id)).toMatchObject({ messageCount: 2 });
    });

    it('I11: an image whose URL is not http(s) or data: (a local file, a script, a relative path) is refused with 400 and nothing is stored', async () => {
      const thread = await newThread();
      for (const url of ['file:///etc/passwd', 'javascript:alert(1)', 'images/cat.png']) {
        for (const block of [{ type: 'image_url', image_url: url }, { type: 'image_url', image_url: { url } }]) {
          const response = await server.request('POST', `/api/threads/${thread.id}/messages`, { body: { content: [{ type: 'text', text: 'look' }, block] } });
          expect(response.status, url).toBe(400);
          expect(response.body.error.code).toBe('VALIDATION_FAILED');
        }
      }
      expect((await server.request('GET', `/api/threads/${thread.id}/history`)).body.messages).toEqual([]);
      const https = await server.request('POST', `/api/threads/${thread.id}/messages`, { body: { content: [{ type: 'image_url', image_url: 'https://example.com/cat.png' }] } });
      expect(https.status).toBe(200);
    });

    it('recalls memories into the model call only, never into saved history', async () => {
      const thread = await newThread();
      const memory = await server.request('POST', '/api/agents/default/memories', { body: { content: 'Alice is allergic to peanuts' } });
      expect(memory.status).toBe(201);
      const answer = await say(thread.id, 'Any peanuts in satay?');
      expect(answer.messages[1].content).toContain('I recalled 1 related memory');
      const history = await server.request('GET', `/api/threads/${thread.id}/history?include=internal`);
      expect(history.body.messages.map((message: { role: string }) => message.role)).toEqual(['user', 'assistant']);
      expect(JSON.stringify(history.body)).not.toContain('allergic');
      const search = await server.request('GET', '/api/agents/default/memories?q=peanuts');
      expect(search.body.memories[0].content).toBe('Alice is allergic to peanuts');
    });
  });

  describe('visibility', () => {
    it('I2: history, thread counts and previews show only real messages; the owner can see internal ones marked', async () => {
      const thread = await newThread();
      await say(thread.id, 'First real message');
      const followed = await followUp(thread.id);
      expect(followed.run.status).toBe('succeeded');
      expect(followed.run.trigger).toBe('autonomy');
      await say(thread.id, [{ type: 'text', text: 'A multimodal real one' }]);
      await followUp(thread.id);

      const history = await server.request('GET', `/api/threads/${thread.id}/history`);
      const roles = history.body.messages.map((message: { role: string }) => message.role);
      expect(roles).toEqual(['user', 'assistant', 'assistant', 'user', 'assistant', 'assistant']);
      expect(JSON.stringify(history.body)).not.toContain(TRIGGER_PROMPTS.question_unanswered);
      expect(history.body.messages.every((message: Record<string, unknown>) => !('additionalKwargs' in message))).toBe(true);

      const listed = (await server.request('GET', '/api/threads')).body.threads.find((item: { id: string }) => item.id === thread.id);
      expect(listed.messageCount).toBe(6);
      expect(listed.preview).toContain('Following up');

      const internal = await server.request('GET', `/api/threads/${thread.id}/history?include=internal`);
      expect(internal.body.messages).toHaveLength(8);
      const synthetic = internal.body.messages.filter((message: { visibility: string }) => message.visibility === 'internal');
      expect(synthetic).toHaveLength(2);
      expect(synthetic[0].additionalKwargs).toEqual({ synthetic: true, trigger_type: 'question_unanswered', trigger_reason: 'test: silence' });
      expect(synthetic[0].content).toBe(TRIGGER_PROMPTS.question_unanswered);
    });

    it('I2: an internal message never moves the thread\'s user activity time', async () => {
      const thread = await newThread();
      await say(thread.id, 'I am here');
      const before = (await server.request('GET', `/api/threads/${thread.id}`)).body.lastUserActivityAt;
      expect(before).not.toBeNull();
      await new Promise((resolve) => setTimeout(resolve, 5));
      await followUp(thread.id);
      const after = (await server.request('GET', `/api/threads/${thread.id}`)).body;
      expect(after.lastUserActivityAt).toBe(before);
      expect(after.updatedAt >= before).toBe(true);
    });

    it('I2: a synthetic message is never streamed to clients as a person\'s message', async () => {
      const thread = await newThread();
      await say(thread.id, 'hi');
      const seen: Array<{ type: string; runId?: string; message?: { role: string; content: unknown } }> = [];
      // Subscribe as a client would, through the WebSocket.
      const { WebSocket } = await import('ws');
      const socket = new WebSocket(`${server.url.replace('http', 'ws')}/api/ws?token=${ALICE.token}`);
      await new Promise((resolve, reject) => {
        socket.once('open', resolve);
        socket.once('error', reject);
      });
      socket.on('message', (data) => seen.push(JSON.parse(String(data))));
      socket.send(JSON.stringify({ type: 'thread.subscribe', threadId: thread.id }));
      await waitFor(() => seen.some((event) => event.type === 'thread.subscribed'));
      // On PostgreSQL's bus the first run's last events may still be arriving: look at the follow-up's run only.
      const { run: { id: runId } } = await followUp(thread.id);
      await waitFor(() => seen.some((event) => event.type === 'run.end' && event.runId === runId));
      socket.close();
      const messages = seen.filter((event) => event.type === 'message.end' && event.runId === runId).map((event) => event.message!);
      expect(messages.map((message) => message.role)).toEqual(['assistant']);
      expect(JSON.stringify(seen)).not.toContain(TRIGGER_PROMPTS.question_unanswered);
    });

    it('I1: warns about an unknown trigger type; counts legacy content-classified messages in logs and hides them', async () => {
      const thread = await newThread();
      await say(thread.id, 'hello');
      await server.services.conversations.runTriggered(ALICE.id, thread.id, {
        trigger: 'autonomy',
        input: new HumanMessage({ content: 'Continue our conversation naturally.', additional_kwargs: { synthetic: true, trigger_type: 'mystery' } }),
      });
      expect(server.logs.some((line) => line.level === 40 && line.msg === 'Invalid trigger type on a synthetic message' && line.triggerType === 'mystery')).toBe(true);
      await server.services.conversations.runTriggered(ALICE.id, thread.id, { trigger: 'autonomy', input: new HumanMessage('[AUTONOMOUS_FOLLOWUP: check_in]') });
      const legacy = server.logs.filter((line) => line.msg === 'Message classified internal by the legacy [AUTONOMOUS_FOLLOWUP: content fallback');
      expect(legacy.length).toBeGreaterThanOrEqual(1);
      expect(legacy.at(-1)?.legacyFallbacks).toEqual(expect.any(Number));
      const history = await server.request('GET', `/api/threads/${thread.id}/history`);
      expect(history.body.messages.filter((message: { role: string }) => message.role === 'user').map((message: { content: string }) => message.content)).toEqual(['hello']);
    });

    it('logs history reads at INFO with filtered counts', async () => {
      const thread = await newThread();
      await say(thread.id, 'hello');
      await followUp(thread.id);
      await server.request('GET', `/api/threads/${thread.id}/history`);
      const line = server.logs.find((entry) => entry.msg === 'Extracted messages from thread history' && entry.threadId === thread.id);
      expect(line).toMatchObject({ level: 30, totalMessages: 4, filteredCount: 1, visibleMessages: 3 });
      expect(typeof line?.requestId).toBe('string');
      const debug = server.logs.filter((entry) => entry.msg === 'Filtered synthetic message from thread history' && entry.threadId === thread.id);
      expect(debug).toHaveLength(1);
      expect(debug[0]).toMatchObject({ level: 20, triggerType: 'question_unanswered', triggerReason: 'test: silence' });
    });

    it('pages history with a cursor, newest page first', async () => {
      const thread = await newThread();
      for (let index = 0; index < 3; index++) await say(thread.id, `message ${index}`);
      await followUp(thread.id);
      const first = await server.request('GET', `/api/threads/${thread.id}/history?limit=4`);
      expect(first.body.messages).toHaveLength(4);
      expect(first.body.messages.at(-1).role).toBe('assistant');
      expect(first.body.nextCursor).toEqual(expect.any(String));
      const second = await server.request('GET', `/api/threads/${thread.id}/history?limit=4&cursor=${encodeURIComponent(first.body.nextCursor)}`);
      expect(second.body.messages).toHaveLength(3);
      expect(second.body.nextCursor).toBeNull();
      const all = [...second.body.messages, ...first.body.messages];
      expect(all.filter((message: { role: string }) => message.role === 'user').map((message: { content: string }) => message.content)).toEqual(['message 0', 'message 1', 'message 2']);
    });
  });

  describe('bad input (I11)', () => {
    async function countThreads() {
      return (await server.request('GET', '/api/threads?limit=100')).body.threads.length as number;
    }

    it('I11: malformed JSON, wrong types, unknown fields and oversized bodies are refused with codes and write nothing', async () => {
      const thread = await newThread();
      const before = await countThreads();
      const malformed = await server.request('POST', '/api/threads', { rawBody: '{"title": ', headers: { 'content-type': 'application/json' } });
      expect(malformed.status).toBe(400);
      expect(malformed.body.error.code).toBe('MALFORMED_JSON');
      const wrongType = await server.request('POST', '/api/threads', { body: { title: 42 } });
      expect(wrongType.status).toBe(400);
      expect(wrongType.body.error.code).toBe('VALIDATION_FAILED');
      const unknownField = await server.request('POST', '/api/threads', { body: { title: 'x', owner: 'bob' } });
      expect(unknownField.status).toBe(400);
      expect(unknownField.body.error.code).toBe('VALIDATION_FAILED');
      expect(await countThreads()).toBe(before);

      // A client can never set message metadata.
      const forged = await server.request('POST', `/api/threads/${thread.id}/messages`, { body: { content: 'hi', additional_kwargs: { synthetic: true } } });
      expect(forged.status).toBe(400);
      expect(forged.body.error.code).toBe('VALIDATION_FAILED');
      const emptyContent = await server.request('POST', `/api/threads/${thread.id}/messages`, { body: { content: '   ' } });
      expect(emptyContent.status).toBe(400);
      const huge = await server.request('POST', `/api/threads/${thread.id}/messages`, { body: { content: 'x'.repeat(2 * 1024 * 1024) } });
      expect(huge.status).toBe(413);
      expect(huge.body.error.code).toBe('BODY_TOO_LARGE');
      const notJson = await server.request('POST', '/api/threads', { rawBody: 'title=x', headers: { 'content-type': 'text/plain' } });
      expect(notJson.status).toBe(415);
      expect(notJson.body.error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
      const history = await server.request('GET', `/api/threads/${thread.id}/history?include=internal`);
      expect(history.body.messages).toEqual([]);
      expect((await server.request('GET', `/api/threads/${thread.id}/runs`)).body.runs).toEqual([]);
    });

    it('I11: unknown ids and routes answer 404 with a code; bad query values 400', async () => {
      expect((await server.request('GET', '/api/threads/nope/history')).body.error.code).toBe('THREAD_NOT_FOUND');
      expect((await server.request('POST', '/api/threads', { body: { agentId: 'ghost' } })).body.error.code).toBe('AGENT_NOT_FOUND');
      expect((await server.request('GET', '/api/runs/nope')).body.error.code).toBe('RUN_NOT_FOUND');
      expect((await server.request('DELETE', '/api/memories/nope')).body.error.code).toBe('MEMORY_NOT_FOUND');
      const route = await server.request('GET', '/api/nowhere');
      expect(route.status).toBe(404);
      expect(route.body.error.code).toBe('NOT_FOUND');
      const limit = await server.request('GET', '/api/threads?limit=0');
      expect(limit.status).toBe(400);
      expect(limit.body.error.code).toBe('VALIDATION_FAILED');
      const cursor = await server.request('GET', '/api/threads?cursor=garbage');
      expect(cursor.status).toBe(400);
      expect(cursor.body.error.code).toBe('VALIDATION_FAILED');
    });

    it('I11: a duplicate agent id answers 409 and changes nothing', async () => {
      const body = { id: 'helper', name: 'Helper', systemPrompt: 'Be kind.' };
      expect((await server.request('POST', '/api/agents', { body })).status).toBe(201);
      const again = await server.request('POST', '/api/agents', { body: { ...body, name: 'Other' } });
      expect(again.status).toBe(409);
      expect(again.body.error.code).toBe('AGENT_EXISTS');
      expect((await server.request('GET', '/api/agents/helper')).body.name).toBe('Helper');
    });
  });

  describe('memories', () => {
    type MemoryBody = { id: string; content: string; score?: number };

    async function addMemories(agentId: string, contents: string[], token = ALICE.token): Promise<MemoryBody[]> {
      const added: MemoryBody[] = [];
      for (const content of contents) {
        const response = await server.request('POST', `/api/agents/${agentId}/memories`, { token, body: { content } });
        expect(response.status).toBe(201);
        added.push(response.body);
      }
      return added;
    }

    it('pages the list back to the oldest memory with nextCursor; a search stays one page', async () => {
      expect((await server.request('POST', '/api/agents', { body: { id: 'archivist', name: 'Archivist' } })).status).toBe(201);
      const added = await addMemories('archivist', ['note one', 'note two', 'note three', 'note four', 'note five']);
      const whole = await server.request('GET', '/api/agents/archivist/memories?limit=100');
      expect(whole.status).toBe(200);
      // The answer it always gave, with nextCursor beside it: null when nothing is older.
      expect(whole.body.nextCursor).toBeNull();
      expect(whole.body.memories.map((memory: MemoryBody) => memory.id).sort()).toEqual(added.map((memory) => memory.id).sort());

      const paged: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const query: string = cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`;
        const page = await server.request('GET', `/api/agents/archivist/memories?limit=2${query}`);
        expect(page.status).toBe(200);
        paged.push(...page.body.memories.map((memory: MemoryBody) => memory.id));
        cursor = page.body.nextCursor;
        pages++;
      } while (cursor !== null);
      expect(pages).toBe(3);
      expect(paged).toEqual(whole.body.memories.map((memory: MemoryBody) => memory.id));

      const search = await server.request('GET', '/api/agents/archivist/memories?q=three');
      expect(search.status).toBe(200);
      expect(search.body).toEqual({ memories: [expect.objectContaining({ content: 'note three', score: expect.any(Number) })], nextCursor: null });
    });

    it('I11: a bad cursor, a cursor beside q, or a limit out of range is a 400 VALIDATION_FAILED', async () => {
      const forge = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
      await addMemories('default', ['one to page past', 'and another']);
      const memoryCursor = (await server.request('GET', '/api/agents/default/memories?limit=1')).body.nextCursor;
      expect(memoryCursor).toEqual(expect.any(String));
      const paths = [
        '/api/agents/default/memories?cursor=garbage',
        `/api/agents/default/memories?cursor=${forge({ m: 'yesterday', i: 'x' })}`,
        // A thread list's cursor is not a memory cursor.
        `/api/agents/default/memories?cursor=${forge({ u: new Date().toISOString(), i: 'x' })}`,
        `/api/agents/default/memories?q=page&cursor=${memoryCursor}`,
        '/api/agents/default/memories?limit=0',
        '/api/agents/default/memories?limit=101',
      ];
      for (const path of paths) {
        const response = await server.request('GET', path);
        expect(response.status, path).toBe(400);
        expect(response.body.error.code, path).toBe('VALIDATION_FAILED');
      }
    });

    it("I12: another user's agent's memories are not found, with or without a cursor; a cursor carries nothing across users", async () => {
      // Agent ids are per user: Bob's "journal" is his own, with a note older than Alice's.
      expect((await server.request('POST', '/api/agents', { token: BOB.token, body: { id: 'journal', name: 'Mine' } })).status).toBe(201);
      const [bobs] = await addMemories('journal', ['bob own note'], BOB.token);
      expect((await server.request('POST', '/api/agents', { body: { id: 'journal', name: 'Diary' } })).status).toBe(201);
      await addMemories('journal', ['alice private one', 'alice private two', 'alice private three']);
      const aliceCursor = (await server.request('GET', '/api/agents/journal/memories?limit=1')).body.nextCursor;
      expect(aliceCursor).toEqual(expect.any(String));
      // Alice's cursor in Bob's namespace is only a point in time: it pages Bob's memories.
      const listed = await server.request('GET', `/api/agents/journal/memories?cursor=${aliceCursor}`, { token: BOB.token });
      expect(listed.status).toBe(200);
      expect(listed.body).toEqual({ memories: [expect.objectContaining({ id: bobs!.id, content: 'bob own note' })], nextCursor: null });
      // An agent only Alice has: not found for Bob, listed, paged or searched.
      expect((await server.request('POST', '/api/agents', { body: { id: 'alice-only', name: 'Private' } })).status).toBe(201);
      await addMemories('alice-only', ['alice hidden one', 'alice hidden two']);
      const hiddenCursor = (await server.request('GET', '/api/agents/alice-only/memories?limit=1')).body.nextCursor;
      expect(hiddenCursor).toEqual(expect.any(String));
      for (const path of ['/api/agents/alice-only/memories', `/api/agents/alice-only/memories?cursor=${hiddenCursor}`, '/api/agents/alice-only/memories?q=hidden']) {
        const response = await server.request('GET', path, { token: BOB.token });
        expect(response.status, path).toBe(404);
        expect(response.body.error.code, path).toBe('AGENT_NOT_FOUND');
      }
    });
  });

  describe('users (I12)', () => {
    it('I12: a request without a valid token is refused', async () => {
      const none = await server.request('GET', '/api/threads', { token: '' });
      expect(none.status).toBe(401);
      expect(none.body.error.code).toBe('UNAUTHORIZED');
      expect((await server.request('GET', '/api/threads', { token: 'not-a-real-token-at-all' })).status).toBe(401);
    });

    it("I12: a user sees and touches only their own threads, runs and memories; another's id answers 404", async () => {
      const thread = await newThread(ALICE.token);
      const answer = await say(thread.id, 'private words');
      const memory = (await server.request('POST', '/api/agents/default/memories', { body: { content: 'alice secret plan' } })).body;

      const bobList = await server.request('GET', '/api/threads', { token: BOB.token });
      expect(bobList.body.threads.map((item: { id: string }) => item.id)).not.toContain(thread.id);
      for (const [method, path] of [
        ['GET', `/api/threads/${thread.id}`],
        ['GET', `/api/threads/${thread.id}/history`],
        ['GET', `/api/threads/${thread.id}/runs`],
        ['GET', `/api/runs/${answer.run.id}`],
        ['POST', `/api/runs/${answer.run.id}/cancel`],
        ['DELETE', `/api/memories/${memory.id}`],
      ] as const) {
        const response = await server.request(method, path, { token: BOB.token });
        expect(response.status, `${method} ${path}`).toBe(404);
      }
      const bobSends = await server.request('POST', `/api/threads/${thread.id}/messages`, { token: BOB.token, body: { content: 'let me in' } });
      expect(bobSends.status).toBe(404);
      await newThread(BOB.token); // bob's own default agent
      const bobSearch = await server.request('GET', '/api/agents/default/memories?q=secret', { token: BOB.token });
      expect(bobSearch.body.memories).toEqual([]);
      // Nothing of bob's reached alice's thread.
      const history = await server.request('GET', `/api/threads/${thread.id}/history?include=internal`);
      expect(history.body.messages).toHaveLength(2);
    });

    it('I12: a WebSocket cannot subscribe to or write into another user\'s thread', async () => {
      const thread = await newThread(ALICE.token);
      const { WebSocket } = await import('ws');
      const socket = new WebSocket(`${server.url.replace('http', 'ws')}/api/ws?token=${BOB.token}`);
      await new Promise((resolve) => socket.once('open', resolve));
      const seen: Array<{ type: string; code?: string }> = [];
      socket.on('message', (data) => seen.push(JSON.parse(String(data))));
      socket.send(JSON.stringify({ type: 'thread.subscribe', threadId: thread.id }));
      socket.send(JSON.stringify({ type: 'message.send', threadId: thread.id, content: 'hi' }));
      await waitFor(() => seen.length >= 2);
      socket.close();
      expect(seen.map((event) => event.code)).toEqual(['THREAD_NOT_FOUND', 'THREAD_NOT_FOUND']);
    });
  });

  describe('WebSocket', () => {
    it('subscribes, sends a message, streams the reply and refuses bad frames with codes', async () => {
      const thread = await newThread();
      const { WebSocket } = await import('ws');
      const socket = new WebSocket(`${server.url.replace('http', 'ws')}/api/ws`, { headers: { authorization: `Bearer ${ALICE.token}` } });
      await new Promise((resolve) => socket.once('open', resolve));
      const seen: Array<Record<string, any>> = [];
      socket.on('message', (data) => seen.push(JSON.parse(String(data))));
      socket.send('not json');
      socket.send(JSON.stringify({ type: 'message.send', threadId: thread.id, content: 'x', additional_kwargs: { synthetic: true } }));
      socket.send(JSON.stringify({ type: 'message.send', threadId: thread.id, content: 'over the socket' }));
      await waitFor(() => seen.some((event) => event.type === 'run.end'));
      socket.close();
      expect(seen[0]).toMatchObject({ type: 'error', code: 'MALFORMED_JSON' });
      expect(seen[1]).toMatchObject({ type: 'error', code: 'VALIDATION_FAILED', threadId: thread.id });
      const types = seen.slice(2).map((event) => event.type);
      expect(types[0]).toBe('run.start');
      expect(types).toContain('message.delta');
      expect(types.at(-1)).toBe('run.end');
      const history = await server.request('GET', `/api/threads/${thread.id}/history`);
      expect(history.body.messages.map((message: { content: unknown }) => message.content)[0]).toBe('over the socket');
    });
  });

  describe('cancel', () => {
    it('a run cancelled over the WebSocket ends with run.end cancelled; the thread stays usable', async () => {
      const slow = await startTestServer(backend(), { demoTokenDelayMs: 40 });
      try {
        const thread = (await slow.request('POST', '/api/threads', { body: {} })).body;
        const { WebSocket } = await import('ws');
        const socket = new WebSocket(`${slow.url.replace('http', 'ws')}/api/ws?token=${ALICE.token}`);
        await new Promise((resolve) => socket.once('open', resolve));
        const seen: Array<Record<string, any>> = [];
        socket.on('message', (data) => {
          const event = JSON.parse(String(data));
          seen.push(event);
          if (event.type === 'message.delta' && seen.filter((item) => item.type === 'message.delta').length === 1) {
            socket.send(JSON.stringify({ type: 'run.cancel', runId: event.runId }));
          }
        });
        socket.send(JSON.stringify({ type: 'message.send', threadId: thread.id, content: 'a long answer please' }));
        await waitFor(() => seen.some((event) => event.type === 'run.end'));
        socket.close();
        const end = seen.find((event) => event.type === 'run.end');
        expect(end).toMatchObject({ status: 'cancelled', reason: 'the run was cancelled' });
        expect(seen.filter((event) => event.type === 'message.end').map((event) => event.message.role)).toEqual(['user']);
        const run = await slow.request('GET', `/api/runs/${end!.runId}`);
        expect(run.body).toMatchObject({ status: 'cancelled', reason: 'the run was cancelled', error: null });
        const again = await slow.request('POST', `/api/threads/${thread.id}/messages`, { body: { content: 'and now?' } });
        expect(again.body.run.status).toBe('succeeded');
        const history = await slow.request('GET', `/api/threads/${thread.id}/history`);
        expect(history.body.messages.map((message: { role: string }) => message.role)).toEqual(['user', 'user', 'assistant']);
      } finally {
        await slow.destroy();
      }
    });
  });

  describe('failures', () => {
    it('a failing model ends the run with MODEL_ERROR and run.end; the person\'s message is kept', async () => {
      const failing = await startTestServer(backend(), {
        models: () => new FakeStreamingChatModel({ thrownErrorString: 'provider is down' }),
      });
      try {
        const thread = (await failing.request('POST', '/api/threads', { body: {} })).body;
        const response = await fetch(`${failing.url}/api/threads/${thread.id}/messages`, {
          method: 'POST',
          headers: { authorization: `Bearer ${ALICE.token}`, 'content-type': 'application/json', accept: 'text/event-stream' },
          body: JSON.stringify({ content: 'are you there?' }),
        });
        const events = parseSse(await response.text());
        expect(events.at(-1)).toMatchObject({ event: 'run.end', data: { status: 'failed', error: { code: 'MODEL_ERROR' } } });
        const history = await failing.request('GET', `/api/threads/${thread.id}/history`);
        expect(history.body.messages.map((message: { content: unknown }) => message.content)).toEqual(['are you there?']);
        const runs = await failing.request('GET', `/api/threads/${thread.id}/runs`);
        expect(runs.body.runs[0]).toMatchObject({ status: 'failed', error: { code: 'MODEL_ERROR', message: expect.stringContaining('provider is down') } });
      } finally {
        await failing.destroy();
      }
    });
  });
}
