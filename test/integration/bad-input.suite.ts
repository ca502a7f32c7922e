import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RecordingModel } from '../helpers/recording-model.js';
import { ALICE, BOB, startTestServer, type Backend, type TestServer } from '../helpers/test-server.js';

type Json = Record<string, any>;

const forge = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/**
 * I11 at the edges of what a request may hold: bad input is a 4xx with a stable code and
 * the same on both databases (PostgreSQL refuses some values SQLite stores), and a refused
 * request leaves nothing written.
 */
export function badInputSuite(backend: () => Backend): void {
  describe('bad input', () => {
    let server: TestServer;
    // A model that writes U+0000 in its reply (models do emit control characters).
    const model = new RecordingModel(['before\u0000after']);

    beforeAll(async () => {
      server = await startTestServer(backend(), { models: () => model });
    });
    afterAll(async () => {
      await server?.destroy();
    });

    it('I11: U+0000 anywhere in a request is a 400 VALIDATION_FAILED before anything is written or a model called', async () => {
      const thread = (await server.request('POST', '/api/threads', { body: {} })).body;
      const calls = model.calls.length;
      const sent = await server.request('POST', `/api/threads/${thread.id}/messages`, { body: { content: 'hi\u0000there' } });
      expect(sent.status).toBe(400);
      expect(sent.body.error.code).toBe('VALIDATION_FAILED');
      expect(model.calls.length).toBe(calls);
      expect((await server.request('GET', `/api/threads/${thread.id}/runs`)).body.runs).toEqual([]);
      for (const [method, path, body] of [
        ['GET', '/api/threads/%00', undefined],
        ['GET', '/api/threads?cursor=%00', undefined],
        ['POST', '/api/agents', { id: 'nul-name', name: 'a\u0000b' }],
        ['POST', '/api/agents', { id: 'nul-key', name: 'n', settings: { 'a\u0000': 1 } }],
        ['POST', '/threads', { thread_id: 'abc\u0000' }],
        ['POST', '/assistants', { graph_id: 'chat', assistant_id: 'n\u0000' }],
      ] as const) {
        const answer = await server.request(method, path, body === undefined ? {} : { body });
        expect(answer.status, `${method} ${path}`).toBe(400);
        expect(answer.body.error.code, `${method} ${path}`).toBe('VALIDATION_FAILED');
      }
      expect((await server.request('GET', '/api/agents/nul-name')).status).toBe(404);
      // The thread goes on as if the refused message had never been sent.
      const next = await server.request('POST', `/api/threads/${thread.id}/messages`, { body: { content: 'hello again' } });
      expect(next.status).toBe(200);
      const history = (await server.request('GET', `/api/threads/${thread.id}/history`)).body.messages as Json[];
      expect(history.map((message) => message.role)).toEqual(['user', 'assistant']);
      expect(history[0]!.content).toBe('hello again');
    });

    it("a model's reply holding U+0000 is stored on both databases, in one model call", async () => {
      const thread = (await server.request('POST', '/api/threads', { body: {} })).body;
      const calls = model.calls.length;
      const sent = await server.request('POST', `/api/threads/${thread.id}/messages`, { body: { content: 'say something odd' } });
      expect(sent.status).toBe(200);
      expect(sent.body.run.status).toBe('succeeded');
      expect(model.calls.length).toBe(calls + 1);
      const history = (await server.request('GET', `/api/threads/${thread.id}/history`)).body.messages as Json[];
      expect(history[1]!.content).toBe('before\u0000after');
      // The thread list's preview leaves the control character out.
      const listed = (await server.request('GET', '/api/threads?limit=100')).body.threads.find((item: Json) => item.id === thread.id);
      expect(listed.preview).toBe('beforeafter');
    });

    it('I11: a forged cursor is a 400, including values PostgreSQL cannot hold', async () => {
      const thread = (await server.request('POST', '/api/threads', { body: {} })).body;
      const history = await server.request('GET', `/api/threads/${thread.id}/history?cursor=${forge({ s: 2 ** 31 })}`);
      expect(history.status).toBe(400);
      expect(history.body.error.code).toBe('VALIDATION_FAILED');
      for (const updatedAt of ['0000-01-01T00:00:00.000Z', new Date(-8.64e15).toISOString(), new Date(8.64e15).toISOString()]) {
        const listed = await server.request('GET', `/api/threads?cursor=${forge({ u: updatedAt, i: 'x' })}`);
        expect(listed.status, updatedAt).toBe(400);
      }
      // A genuine cursor still pages (the second user's threads never appear in Alice's pages).
      await server.request('POST', '/api/threads', { token: BOB.token, body: {} });
      const first = await server.request('GET', '/api/threads?limit=1');
      expect(first.body.nextCursor).toEqual(expect.any(String));
      const second = await server.request('GET', `/api/threads?limit=1&cursor=${first.body.nextCursor}`);
      expect(second.status).toBe(200);
    });

    describe('I11: a JSON body nested deeper than 64 levels is refused at the door', () => {
      /** JSON text `levels` arrays deep, written as text: what a client sends, whatever built it. */
      const nested = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
      const deep = nested(5000);
      const send = (method: string, path: string, json: string) => server.request(method, path, { rawBody: json, headers: { 'content-type': 'application/json' } });
      const expectRefused = (answer: { status: number; body: any }, what: string) => {
        expect(answer.status, `${what}: ${JSON.stringify(answer.body)}`).toBe(400);
        expect(answer.body.error.code, what).toBe('VALIDATION_FAILED');
        expect(answer.body.error.message, what).toContain('64');
      };
      const threadIds = async () => ((await server.request('GET', '/api/threads?limit=100')).body.threads as Json[]).map((thread) => thread.id as string).sort();

      it('on every route family: 400 VALIDATION_FAILED, nothing created or changed, no model called', async () => {
        const existing = (await server.request('POST', '/threads', { body: { metadata: { kept: 'yes' } } })).body;
        const threadsBefore = await threadIds();
        const calls = model.calls.length;

        expectRefused(await send('POST', '/threads', `{"thread_id":"deep-thread","metadata":{"a":${deep}}}`), 'POST /threads');
        expectRefused(await send('PATCH', `/threads/${existing.thread_id}`, `{"metadata":{"a":${deep}}}`), 'PATCH /threads/{id}');
        expectRefused(await send('POST', '/assistants', `{"graph_id":"chat","assistant_id":"deep-assistant","metadata":{"a":${deep}}}`), 'POST /assistants');
        expectRefused(await send('POST', '/runs/wait', `{"assistant_id":"default","input":{"messages":[{"type":"human","content":"hi"}]},"metadata":{"a":${deep}}}`), 'POST /runs/wait');
        expectRefused(await send('POST', '/threads/search', `{"metadata":{"a":${deep}}}`), 'POST /threads/search');
        expectRefused(await send('POST', '/api/agents', `{"id":"deep-agent","name":"n","tools":${deep}}`), 'POST /api/agents');
        expectRefused(await send('POST', `/api/threads/${existing.thread_id}/messages`, `{"content":${deep}}`), 'POST /api/threads/{id}/messages');
        // A body that is nothing but nesting, with no object at the top.
        expectRefused(await send('POST', '/threads/search', deep), 'a bare deep array');

        expect((await server.request('GET', '/threads/deep-thread')).status).toBe(404);
        expect((await server.request('GET', `/threads/${existing.thread_id}`)).body.metadata).toMatchObject({ kept: 'yes' });
        expect((await server.request('GET', '/assistants/deep-assistant')).status).toBe(404);
        expect((await server.request('GET', '/api/agents/deep-agent')).status).toBe(404);
        expect(await threadIds()).toEqual(threadsBefore);
        expect(model.calls.length).toBe(calls);
      });

      it('64 levels are accepted, 65 are not', async () => {
        // The body is level 1, metadata level 2: 62 arrays inside it make 64.
        const [at64, at65, text, proto] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
        const atBound = await send('POST', '/threads', `{"thread_id":"${at64}","metadata":{"a":${nested(62)}}}`);
        expect(atBound.status, JSON.stringify(atBound.body)).toBe(200);
        expect((await server.request('GET', `/threads/${at64}`)).body.metadata.a).toEqual(JSON.parse(nested(62)));
        expectRefused(await send('POST', '/threads', `{"thread_id":"${at65}","metadata":{"a":${nested(63)}}}`), '65 levels');
        expect((await server.request('GET', `/threads/${at65}`)).status).toBe(404);
        // Deep-looking text inside a string is not nesting.
        const inString = await send('POST', '/threads', `{"thread_id":"${text}","metadata":{"a":${JSON.stringify(deep)}}}`);
        expect(inString.status, JSON.stringify(inString.body)).toBe(200);
        // The parser is still Fastify's underneath: a prototype key and broken JSON are refused as before.
        const poisoned = await send('POST', '/threads', `{"thread_id":"${proto}","metadata":{"__proto__":{"x":1}}}`);
        expect([poisoned.status, poisoned.body.error.code]).toEqual([400, 'MALFORMED_JSON']);
        expect((await send('POST', '/threads', '{"thread_id":')).body.error.code).toBe('MALFORMED_JSON');
        expect((await server.request('GET', `/threads/${proto}`)).status).toBe(404);
      });
    });

    it('a thread named with the longest id the API accepts (128 characters) can be read, changed and deleted', async () => {
      // Counted in characters, as the schemas count: 128 of them are 256 bytes, 768 characters once percent-encoded.
      // Such ids were made before a client-chosen protocol thread id had to be a UUID; those threads are still reached.
      for (const id of [`long-${'x'.repeat(123)}`, 'é'.repeat(128)]) {
        const path = `/threads/${encodeURIComponent(id)}`;
        await server.services.conversations.createThread(ALICE.id, { id });
        const read = await server.request('GET', path);
        expect(read.status, JSON.stringify(read.body)).toBe(200);
        expect(read.body.thread_id).toBe(id);
        expect((await server.request('GET', `/api/threads/${encodeURIComponent(id)}`)).body.id).toBe(id);
        expect((await server.request('PATCH', path, { body: { metadata: { seen: true } } })).body.metadata.seen).toBe(true);
        // A checkpoint id may be longer still (200): the route answers it, the router does not.
        const checkpoint = await server.request('GET', `${path}/state/${'c'.repeat(200)}`);
        expect(checkpoint.body.error.message).toContain(`no checkpoint "${'c'.repeat(200)}"`);
        expect((await server.request('GET', path, { token: BOB.token })).status).toBe(404);
        const deleted = await server.request('DELETE', path);
        expect(deleted.status, JSON.stringify(deleted.body)).toBe(204);
        expect((await server.request('GET', path)).status).toBe(404);
      }
      // One character more is the schema's refusal, in the envelope, like any bad id.
      const tooLong = await server.request('GET', `/threads/${'x'.repeat(129)}`);
      expect([tooLong.status, tooLong.body.error.code]).toEqual([400, 'VALIDATION_FAILED']);
    });

    it('a wide body (200,000 items in one array) is checked for U+0000 like any other, not a 500', async () => {
      const items = new Array(200_000).fill('0');
      const send = (json: string) => server.request('POST', '/threads/search', { rawBody: json, headers: { 'content-type': 'application/json' } });
      const searched = await send(`{"metadata":{"a":[${items.join(',')}]}}`);
      expect(searched.status, searched.text.slice(0, 200)).toBe(200);
      items[items.length - 1] = '"\\u0000"';
      const refused = await send(`{"metadata":{"a":[${items.join(',')}]}}`);
      expect([refused.status, refused.body.error.code]).toEqual([400, 'VALIDATION_FAILED']);
    });

    it("the router's own refusals answer in the envelope: a path parameter longer than any route takes, broken percent-encoding", async () => {
      for (const [path, token] of [
        [`/api/threads/${'x'.repeat(1000)}`, undefined],
        [`/threads/${'x'.repeat(201)}`, undefined],
        ['/api/threads/%FF', undefined],
        ['/threads/%E0%A4%A', undefined],
        // Before the token is checked: the answer holds nothing but the refusal.
        ['/api/threads/%FF', ''],
      ] as const) {
        const answer = await server.request('GET', path, token === undefined ? {} : { token });
        const what = `${path.slice(0, 40)}: ${answer.status} ${answer.text.slice(0, 160)}`;
        expect(answer.status, what).toBe(400);
        expect(answer.body, what).toEqual({ error: { code: 'VALIDATION_FAILED', message: expect.any(String) } });
        expect(answer.headers.get('content-type'), what).toMatch(/^application\/json/);
        expect(answer.headers.get('x-request-id'), what).toBeTruthy();
      }
    });

    describe('I11: a refused LangGraph run writes nothing', () => {
      const input = { messages: [{ type: 'human', content: 'hi' }] };
      const threadIds = async () => ((await server.request('GET', '/api/threads?limit=100')).body.threads as Json[]).map((thread) => thread.id as string).sort();
      // Metadata nested deeper than the store can encode it (JSON.stringify recurses): the
      // request fails after the thread would have been made (a 500; a 400 where the body
      // parser bounds nesting). Either way the thread is made with it or not at all.
      const deep = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
      const raw = (fields: string) => ({ rawBody: `{${fields}}`, headers: { 'content-type': 'application/json' } });

      it('POST /threads whose metadata cannot be stored leaves no thread: the same id is then made (not 409), and stays invisible to another user', async () => {
        const threadId = randomUUID();
        const failed = await server.request('POST', '/threads', raw(`"thread_id":"${threadId}","metadata":${deep(20_000)}`));
        expect(failed.status).not.toBe(200);
        expect((await server.request('GET', `/threads/${threadId}`)).status).toBe(404);
        const made = await server.request('POST', '/threads', { body: { thread_id: threadId, metadata: { kept: 'yes' } } });
        expect(made.status).toBe(200);
        expect(made.body.metadata).toMatchObject({ kept: 'yes' });
        expect((await server.request('GET', `/threads/${threadId}`, { token: BOB.token })).status).toBe(404);
      });

      it('a run that makes its thread (stateless, or if_not_exists=create) and cannot be recorded leaves no thread', async () => {
        const before = await threadIds();
        const message = JSON.stringify(input);
        const stateless = await server.request('POST', '/runs/wait', raw(`"assistant_id":"agent","input":${message},"metadata":${deep(20_000)}`));
        expect(stateless.status).not.toBe(200);
        const threadId = randomUUID();
        const onThread = await server.request('POST', `/threads/${threadId}/runs`, raw(`"assistant_id":"agent","if_not_exists":"create","input":${message},"metadata":${deep(20_000)}`));
        expect(onThread.status).not.toBe(200);
        expect(await threadIds()).toEqual(before);
        expect((await server.request('GET', `/threads/${threadId}`)).status).toBe(404);
        // Sent again with what can be stored, the run makes the thread (no 409 from a half-made one).
        const made = await server.request('POST', `/threads/${threadId}/runs/wait`, { body: { assistant_id: 'agent', if_not_exists: 'create', input } });
        expect(made.status).toBe(200);
        expect((await server.request('GET', `/threads/${threadId}`, { token: BOB.token })).status).toBe(404);
      });

      it('a stateless run refused for its checkpoint_id leaves no thread', async () => {
        const before = await threadIds();
        const refused = await server.request('POST', '/runs', { body: { assistant_id: 'default', input, checkpoint_id: 'not-the-head' } });
        expect(refused.status).toBe(422);
        expect(await threadIds()).toEqual(before);
      });

      it('if_not_exists=create with a resume that has nothing to resume creates no thread', async () => {
        const threadId = randomUUID();
        const refused = await server.request('POST', `/threads/${threadId}/runs`, {
          body: { assistant_id: 'default', if_not_exists: 'create', command: { resume: { decisions: [{ type: 'approve' }] } } },
        });
        expect(refused.status).toBe(422);
        expect((await server.request('GET', `/threads/${threadId}`)).status).toBe(404);
      });

      it('a refused run leaves an empty thread bound to its assistant', async () => {
        expect((await server.request('POST', '/assistants', { body: { graph_id: 'chat', assistant_id: 'other' } })).status).toBe(200);
        const thread = (await server.request('POST', '/threads', { body: {} })).body;
        expect(thread.metadata.assistant_id).toBe('default');
        const refused = await server.request('POST', `/threads/${thread.thread_id}/runs`, { body: { assistant_id: 'other', input, checkpoint_id: 'vigil-7' } });
        expect(refused.status).toBe(422);
        expect((await server.request('GET', `/threads/${thread.thread_id}`)).body.metadata.assistant_id).toBe('default');
      });
    });
  });
}
