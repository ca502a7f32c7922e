import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import type { BaseMessage } from '@langchain/core/messages';
import type { SqlStorage } from '../../src/adapters/sql/sql-storage.js';
import type { HookTables } from '../../src/adapters/sql/hook-tables.js';
import { Webhook } from 'standardwebhooks';
import { signedHeaders } from '../helpers/webhook-signing.js';
import { ENVELOPE_KEY } from '../../src/domain/envelope/build-envelope.js';
import { ENVELOPE_KWARG, newRunNonce, systemPromptRule } from '../../src/domain/envelope/envelope-marker.js';
import { NONCE_PLACEHOLDER } from '../../src/domain/envelope/envelope-visibility.js';
import { RecordingModel } from '../helpers/recording-model.js';
import { ALICE, BOB, startTestServer, type Backend, type TestServer } from '../helpers/test-server.js';

/** Signed webhooks, run against each storage backend by the *.test.ts files beside this one. */
export function webhookSuite(backend: () => Backend): void {
  let server: TestServer;
  const model = new RecordingModel(['Thanks, noted.']);

  beforeAll(async () => {
    server = await startTestServer(backend(), { models: () => model });
  });
  afterAll(async () => {
    await server?.destroy();
  });

  interface CreatedHook {
    id: string;
    secret: string;
    threadId: string | null;
    deliveryUrl: string;
  }

  async function newThread(token = ALICE.token): Promise<string> {
    const response = await server.request('POST', '/api/threads', { token, body: {} });
    expect(response.status).toBe(201);
    return response.body.id as string;
  }

  async function createHook(body: Record<string, unknown>, token = ALICE.token): Promise<CreatedHook> {
    const response = await server.request('POST', '/api/hooks', { token, body: { name: 'CI events', taskTemplate: 'New event {{payload.kind}} from {{payload.repo}}', ...body } });
    expect(response.status, response.text).toBe(201);
    return response.body as CreatedHook;
  }

  interface DeliveryOptions {
    secret?: string;
    timestamp?: number;
    deliveryId?: string | null;
    signature?: string | null;
    rawBody?: string;
    contentType?: string;
  }

  /** A delivery signed the Standard Webhooks way, with the library a sender would use. */
  async function deliver(hook: { id: string; secret: string }, payload: unknown, options: DeliveryOptions = {}) {
    const rawBody = options.rawBody ?? JSON.stringify(payload);
    const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000);
    const deliveryId = options.deliveryId === undefined ? `msg_${randomUUID()}` : options.deliveryId;
    const headers: Record<string, string> = { 'content-type': options.contentType ?? 'application/json', ...signedHeaders(options.secret ?? hook.secret, deliveryId ?? 'unsent', timestamp, rawBody) };
    if (deliveryId === null) delete headers['webhook-id'];
    if (options.signature === null) delete headers['webhook-signature'];
    else if (options.signature !== undefined) headers['webhook-signature'] = options.signature;
    return send(hook.id, headers, rawBody);
  }

  // No bearer token: the signature is the authentication.
  function send(hookId: string, headers: Record<string, string>, rawBody: string) {
    return server.request('POST', `/api/hooks/${hookId}`, { token: '', headers, rawBody });
  }

  const sign = (secret: string, id: string, timestamp: number, rawBody: string) => new Webhook(secret).sign(id, new Date(timestamp * 1000), rawBody);

  async function runOf(runId: string, token = ALICE.token) {
    let run: Record<string, any> | undefined;
    const started = Date.now();
    for (;;) {
      const response = await server.request('GET', `/api/runs/${runId}`, { token });
      if (response.status === 200 && response.body.status !== 'running') {
        run = response.body;
        break;
      }
      if (Date.now() - started > 10_000) throw new Error(`run ${runId} did not end`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return run;
  }

  async function runsOf(threadId: string) {
    return (await server.request('GET', `/api/threads/${threadId}/runs?limit=100`)).body.runs as Array<Record<string, any>>;
  }

  function marked(messages: readonly BaseMessage[]): BaseMessage[] {
    return messages.filter((message) => Object.hasOwn(message.additional_kwargs, ENVELOPE_KWARG));
  }

  function callOfRun(runId: string): BaseMessage[] {
    const call = model.calls.find((messages) => marked(messages).some((message) => String(message.content).includes(runId)));
    if (!call) throw new Error(`no model call saw run ${runId}`);
    return call;
  }

  describe('managing hooks', () => {
    it('creates a hook whose secret is shown once, stored encrypted, never returned again', async () => {
      const hook = await createHook({});
      expect(hook.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/); // Standard Webhooks: whsec_ + base64 of 32 bytes
      expect(() => new Webhook(hook.secret)).not.toThrow();
      expect(hook.deliveryUrl).toBe(`/api/hooks/${hook.id}`);
      expect(hook.threadId).toBeNull();
      const fetched = await server.request('GET', `/api/hooks/${hook.id}`);
      expect(fetched.status).toBe(200);
      expect(fetched.body).not.toHaveProperty('secret');
      expect(fetched.text).not.toContain(hook.secret);
      const listed = await server.request('GET', '/api/hooks');
      expect(listed.body.hooks.map((item: { id: string }) => item.id)).toContain(hook.id);
      expect(listed.text).not.toContain(hook.secret);
      // At rest: sealed, not the secret, and bound to its row.
      const row = await (server.storage as SqlStorage).context.db
        .withTables<HookTables>()
        .selectFrom('hooks')
        .select('secret_ciphertext')
        .where('id', '=', hook.id)
        .executeTakeFirstOrThrow();
      expect(row.secret_ciphertext).toMatch(/^v1\./);
      expect(row.secret_ciphertext).not.toContain(hook.secret.slice('whsec_'.length));
      expect(JSON.stringify(server.logs)).not.toContain(hook.secret);
    });

    it('I11: refuses bad templates, unknown fields and foreign targets with codes, writing nothing', async () => {
      const before = (await server.request('GET', '/api/hooks?limit=100')).body.hooks.length;
      const unknownName = await server.request('POST', '/api/hooks', { body: { name: 'x', taskTemplate: 'Run {{process.env.SECRET}}' } });
      expect(unknownName.status).toBe(400);
      expect(unknownName.body.error.code).toBe('VALIDATION_FAILED');
      const unclosed = await server.request('POST', '/api/hooks', { body: { name: 'x', taskTemplate: 'Run {{payload.kind' } });
      expect(unclosed.body.error.code).toBe('VALIDATION_FAILED');
      const notWhitelisted = await server.request('POST', '/api/hooks', { body: { name: 'x', taskTemplate: '{{payload.repo}}', payloadFields: ['kind'] } });
      expect(notWhitelisted.body.error.code).toBe('VALIDATION_FAILED');
      const unknownField = await server.request('POST', '/api/hooks', { body: { name: 'x', taskTemplate: 'hi', secret: 'mine' } });
      expect(unknownField.body.error.code).toBe('VALIDATION_FAILED');
      const ghostAgent = await server.request('POST', '/api/hooks', { body: { name: 'x', taskTemplate: 'hi', agentId: 'ghost' } });
      expect(ghostAgent.body.error.code).toBe('AGENT_NOT_FOUND');
      expect((await server.request('GET', '/api/hooks?limit=100')).body.hooks).toHaveLength(before);
    });

    it('I12: only the owner sees, deletes or targets; managing needs a bearer token', async () => {
      const aliceThread = await newThread();
      const hook = await createHook({ threadId: aliceThread });
      expect((await server.request('GET', `/api/hooks/${hook.id}`, { token: BOB.token })).body.error.code).toBe('HOOK_NOT_FOUND');
      expect((await server.request('DELETE', `/api/hooks/${hook.id}`, { token: BOB.token })).status).toBe(404);
      expect((await server.request('GET', '/api/hooks', { token: BOB.token })).body.hooks).toEqual([]);
      const onAliceThread = await server.request('POST', '/api/hooks', { token: BOB.token, body: { name: 'x', taskTemplate: 'hi', threadId: aliceThread } });
      expect(onAliceThread.status).toBe(404);
      expect(onAliceThread.body.error.code).toBe('THREAD_NOT_FOUND');
      expect((await server.request('POST', '/api/hooks', { token: '', body: { name: 'x', taskTemplate: 'hi' } })).status).toBe(401);
      expect((await server.request('GET', `/api/hooks/${hook.id}`, { token: '' })).status).toBe(401);
    });
  });

  describe('deliveries', () => {
    it('a validly signed delivery answers 202 and starts a webhook run: synthetic task, bounded meta, one envelope before the task', async () => {
      const threadId = await newThread();
      const hook = await createHook({ threadId });
      const deliveryId = `d-${randomUUID()}`;
      const response = await deliver(hook, { kind: 'push', repo: 'acme/api', commits: 3, pusher: { name: 'ada' }, files: ['a', 'b'] }, { deliveryId });
      expect(response.status, response.text).toBe(202);
      expect(response.body).toEqual({ runId: expect.any(String), threadId, deliveryId });

      const run = await runOf(response.body.runId);
      expect(run).toMatchObject({ status: 'succeeded', trigger: 'webhook', threadId });
      expect(run!.meta).toEqual({
        trigger: 'webhook',
        run_id: run!.id,
        requested_at_utc: run!.requestedAt,
        correlation_id: run!.correlationId,
        hook_id: hook.id,
        delivery_id: deliveryId,
        payload: { kind: 'push', repo: 'acme/api', commits: 3, 'pusher.name': 'ada' }, // flat, scalars only
      });
      expect(run!.startedAt).toEqual(expect.any(String));
      expect(run!.endedAt).toEqual(expect.any(String));

      // The task is a synthetic message: internal, never in a person's history (I2).
      const history = await server.request('GET', `/api/threads/${threadId}/history`);
      expect(history.body.messages.map((message: { role: string }) => message.role)).toEqual(['assistant']);
      const internal = await server.request('GET', `/api/threads/${threadId}/history?include=internal`);
      const task = internal.body.messages.find((message: { visibility: string }) => message.visibility === 'internal');
      expect(task.content).toBe('New event push from acme/api');
      expect(task.additionalKwargs).toMatchObject({ synthetic: true, trigger_type: 'webhook', hook_id: hook.id, delivery_id: deliveryId });

      // What the model saw (seed 004): the rule with this run's nonce, exactly one envelope, right before the task.
      const seen = callOfRun(run!.id);
      const envelopes = marked(seen);
      expect(envelopes).toHaveLength(1);
      expect(seen.indexOf(envelopes[0]!)).toBe(seen.length - 2);
      expect(seen.at(-1)?.content).toBe('New event push from acme/api');
      const body = (JSON.parse(String(envelopes[0]!.content)) as Record<string, Record<string, unknown>>)[ENVELOPE_KEY]!;
      expect(body).toMatchObject({ trigger: 'webhook', hook_id: hook.id, delivery_id: deliveryId, run_id: run!.id });
      expect(String(seen[0]?.content)).toContain(systemPromptRule(String(body.nonce)));
      // I4: the run record shows the envelope exactly as the model read it, the unstored nonce replaced by a same-length stand-in.
      expect(NONCE_PLACEHOLDER.length).toBe(newRunNonce().length);
      const read = String(envelopes[0]!.content);
      expect(run!.envelope).toEqual({ shown: true, json: read.replace(String(body.nonce), NONCE_PLACEHOLDER), bytes: Buffer.byteLength(read), stage: 'full' });
    });

    it('a hook without a thread starts a new thread per delivery', async () => {
      const hook = await createHook({});
      const first = await deliver(hook, { kind: 'a', repo: 'r' });
      const second = await deliver(hook, { kind: 'b', repo: 'r' });
      expect(first.status).toBe(202);
      expect(second.status).toBe(202);
      expect(first.body.threadId).not.toBe(second.body.threadId);
      await runOf(first.body.runId);
      await runOf(second.body.runId);
      const thread = await server.request('GET', `/api/threads/${first.body.threadId}`);
      expect(thread.body).toMatchObject({ title: 'Webhook: CI events', agentId: 'default' });
    });

    it('a secret in the payload reaches none of: the model input, the run record, the history, the logs', async () => {
      const threadId = await newThread();
      const hook = await createHook({ threadId, taskTemplate: 'Deploy {{payload.kind}}: {{payload.note}} ({{payload.token}})' });
      const openAiKey = 'sk-proj-Zq8vN3xW7yT2kL5mR9pB4cF6hJ1dG0sA';
      const token = 'tok_5f4dcc3b5aa765d61d8327deb882cf99';
      const response = await deliver(hook, { kind: 'deploy', note: `use ${openAiKey} for the rollout`, token, api_key: 'plainvalue123456', nested: { password: 'hunter2hunter2' } });
      expect(response.status).toBe(202);
      const run = await runOf(response.body.runId);
      expect(run!.meta.payload).toMatchObject({ kind: 'deploy', token: '[redacted]', api_key: '[redacted]', 'nested.password': '[redacted]' });
      expect(run!.meta.payload.note).toBe('use [redacted] for the rollout');

      const secrets = [openAiKey, token, 'plainvalue123456', 'hunter2hunter2'];
      const seen = JSON.stringify(callOfRun(run!.id).map((message) => message.content));
      const record = JSON.stringify(run);
      const history = (await server.request('GET', `/api/threads/${threadId}/history?include=internal`)).text;
      const logs = JSON.stringify(server.logs);
      for (const secret of secrets) {
        expect(seen, 'model input').not.toContain(secret);
        expect(record, 'run record').not.toContain(secret);
        expect(history, 'history').not.toContain(secret);
        expect(logs, 'logs').not.toContain(secret);
      }
      expect(seen).toContain('Deploy deploy: use [redacted] for the rollout ([redacted])');
    });

    it('I11: a bad signature, a stale timestamp or a replay is refused with its code and starts nothing', async () => {
      const threadId = await newThread();
      const hook = await createHook({ threadId });
      const other = await createHook({});
      const payload = { kind: 'push', repo: 'acme/api' };
      const now = Math.floor(Date.now() / 1000);
      const cases: Array<[string, DeliveryOptions, number, string]> = [
        ['another hook secret', { secret: other.secret }, 401, 'HOOK_SIGNATURE_INVALID'],
        ['no signature', { signature: null }, 401, 'HOOK_SIGNATURE_INVALID'],
        ['a malformed signature', { signature: 'v1,zz' }, 401, 'HOOK_SIGNATURE_INVALID'],
        ['a signature of another version', { signature: sign(hook.secret, 'd-1', now, JSON.stringify(payload)).replace('v1,', 'v2,'), deliveryId: 'd-1' }, 401, 'HOOK_SIGNATURE_INVALID'],
        ['a signature of another body', { signature: sign(hook.secret, 'd-2', now, JSON.stringify({ kind: 'other' })), deliveryId: 'd-2', timestamp: now }, 401, 'HOOK_SIGNATURE_INVALID'],
        ['a signature over another timestamp', { timestamp: now, deliveryId: 'd-3', signature: sign(hook.secret, 'd-3', now - 1, JSON.stringify(payload)) }, 401, 'HOOK_SIGNATURE_INVALID'],
        ['a signature over another id', { timestamp: now, deliveryId: 'd-4', signature: sign(hook.secret, 'd-5', now, JSON.stringify(payload)) }, 401, 'HOOK_SIGNATURE_INVALID'],
        ['a timestamp 10 minutes old', { timestamp: now - 600 }, 401, 'HOOK_TIMESTAMP_STALE'],
        ['a timestamp 10 minutes ahead', { timestamp: now + 600 }, 401, 'HOOK_TIMESTAMP_STALE'],
        ['no delivery id', { deliveryId: null }, 400, 'VALIDATION_FAILED'],
        ['a valid signature over invalid JSON', { rawBody: '{"kind": ' }, 400, 'MALFORMED_JSON'],
        ['a JSON array body', { rawBody: '[1,2]' }, 400, 'VALIDATION_FAILED'],
        ['a text/plain body', { contentType: 'text/plain' }, 415, 'UNSUPPORTED_MEDIA_TYPE'],
      ];
      for (const [name, options, status, code] of cases) {
        const response = await deliver(hook, payload, options);
        expect(response.status, name).toBe(status);
        expect(response.body.error.code, name).toBe(code);
      }
      expect(await runsOf(threadId), 'no run record').toEqual([]);
      const unknown = await deliver({ id: randomUUID(), secret: hook.secret }, payload);
      expect(unknown.status).toBe(404);
      expect(unknown.body.error.code).toBe('HOOK_NOT_FOUND');

      // A refused delivery id was not burned: the same id, now valid, is accepted once…
      const deliveryId = `retry-${randomUUID()}`;
      expect((await deliver(hook, payload, { deliveryId, rawBody: '{"kind": ' })).status).toBe(400);
      const accepted = await deliver(hook, payload, { deliveryId });
      expect(accepted.status).toBe(202);
      await runOf(accepted.body.runId);
      // …and a replay of it, even freshly signed, starts nothing.
      const replay = await deliver(hook, payload, { deliveryId });
      expect(replay.status).toBe(409);
      expect(replay.body.error.code).toBe('HOOK_DELIVERY_REPLAYED');
      expect((await runsOf(threadId)).map((run) => run.id)).toEqual([accepted.body.runId]);
    });

    it('I11: a captured delivery resent with a new webhook-id fails its signature; resent as is, it is a replay (409)', async () => {
      const threadId = await newThread();
      const hook = await createHook({ threadId });
      const rawBody = JSON.stringify({ kind: 'deploy', repo: 'acme/api' });
      const captured: Record<string, string> = { 'content-type': 'application/json', ...signedHeaders(hook.secret, `msg_${randomUUID()}`, Math.floor(Date.now() / 1000), rawBody) };
      const accepted = await send(hook.id, captured, rawBody);
      expect(accepted.status, accepted.text).toBe(202);
      await runOf(accepted.body.runId);
      // The attack the old scheme let through: same signature, same timestamp, a fresh id.
      const renamed = await send(hook.id, { ...captured, 'webhook-id': `msg_${randomUUID()}` }, rawBody);
      expect(renamed.status).toBe(401);
      expect(renamed.body.error.code).toBe('HOOK_SIGNATURE_INVALID');
      const replayed = await send(hook.id, captured, rawBody);
      expect(replayed.status).toBe(409);
      expect(replayed.body.error.code).toBe('HOOK_DELIVERY_REPLAYED');
      // The old x-vigil-* headers are gone: a delivery signed only that way is refused.
      const old = await send(hook.id, { 'content-type': 'application/json', 'x-vigil-timestamp': captured['webhook-timestamp']!, 'x-vigil-delivery': 'legacy-1', 'x-vigil-signature': `sha256=${'0'.repeat(64)}` }, rawBody);
      expect(old.status).toBe(401);
      expect(old.body.error.code).toBe('HOOK_SIGNATURE_INVALID');
      expect((await runsOf(threadId)).map((run) => run.id)).toEqual([accepted.body.runId]);
    });

    it('I12: a second user cannot use another user\'s hook: their own hook\'s secret does not sign for it', async () => {
      const aliceThread = await newThread();
      const aliceHook = await createHook({ threadId: aliceThread });
      const bobHook = await createHook({}, BOB.token);
      const refused = await deliver({ id: aliceHook.id, secret: bobHook.secret }, { kind: 'x', repo: 'y' });
      expect(refused.status).toBe(401);
      expect(refused.body.error.code).toBe('HOOK_SIGNATURE_INVALID');
      expect(await runsOf(aliceThread)).toEqual([]);
      expect((await server.request('GET', `/api/hooks/${aliceHook.id}`, { token: BOB.token })).status).toBe(404);
      // Bob's own hook works for Bob, on Bob's thread.
      const own = await deliver(bobHook, { kind: 'x', repo: 'y' });
      expect(own.status).toBe(202);
      await runOf(own.body.runId, BOB.token);
      expect((await server.request('GET', `/api/threads/${own.body.threadId}`, { token: BOB.token })).status).toBe(200);
      expect((await server.request('GET', `/api/threads/${own.body.threadId}`)).status).toBe(404);
    });

    it('I11: of identical deliveries sent at once, exactly one starts a run', async () => {
      const threadId = await newThread();
      const hook = await createHook({ threadId });
      const rawBody = JSON.stringify({ kind: 'race', repo: 'r' });
      const timestamp = Math.floor(Date.now() / 1000);
      const options = { deliveryId: `race-${randomUUID()}`, timestamp, rawBody };
      const responses = await Promise.all(Array.from({ length: 6 }, () => deliver(hook, null, options)));
      expect(responses.map((response) => response.status).sort()).toEqual([202, 409, 409, 409, 409, 409]);
      const accepted = responses.find((response) => response.status === 202)!;
      await runOf(accepted.body.runId);
      expect((await runsOf(threadId)).map((run) => run.id)).toEqual([accepted.body.runId]);
    });

    /** What an attempt that died before its 202 left: the delivery recorded, and a run record (ended as the orphaned-run sweep ends it) or none. */
    async function earlierAttempt(hook: CreatedHook, deliveryId: string, options: { receivedAgoMs: number; run?: { threadId: string; status: 'running' | 'failed' } }) {
      const runId = randomUUID();
      const receivedAt = new Date(Date.now() - options.receivedAgoMs).toISOString();
      await (server.storage as SqlStorage).context.db
        .withTables<HookTables>()
        .insertInto('hook_deliveries')
        .values({ hook_id: hook.id, delivery_id: deliveryId, run_id: runId, received_at: receivedAt })
        .execute();
      if (options.run) {
        const thread = await server.request('GET', `/api/threads/${options.run.threadId}`);
        await server.storage.runs.create({
          id: runId, threadId: options.run.threadId, userId: ALICE.id, agentId: thread.body.agentId, trigger: 'webhook', meta: {}, correlationId: randomUUID(), model: 'recording', requestedAt: receivedAt, startedAt: receivedAt,
        });
        if (options.run.status === 'failed') {
          await server.storage.runs.finish(runId, { status: 'failed', reason: 'its process ended before the run finished', errorCode: 'INTERNAL', endedAt: new Date().toISOString() });
        }
      }
      return runId;
    }

    async function tasksIn(threadId: string, deliveryId: string): Promise<number> {
      const history = await server.request('GET', `/api/threads/${threadId}/history?include=internal&limit=200`);
      return (history.body.messages as Array<{ additionalKwargs?: Record<string, unknown> }>).filter((message) => message.additionalKwargs?.delivery_id === deliveryId).length;
    }

    it('a delivery whose earlier attempt died before storing its task (its run ended with no message) runs on the sender\'s retry, once; the next retry is a replay', async () => {
      const threadId = await newThread();
      const bound = await createHook({ threadId });
      const perDelivery = await createHook({});
      const earlierThread = await newThread();
      for (const [hook, runThread] of [[bound, threadId], [perDelivery, earlierThread]] as const) {
        const deliveryId = `crashed-${randomUUID()}`;
        const earlierRunId = await earlierAttempt(hook, deliveryId, { receivedAgoMs: 60_000, run: { threadId: runThread, status: 'failed' } });
        const retried = await deliver(hook, { kind: 'retried', repo: 'r' }, { deliveryId });
        expect(retried.status, retried.text).toBe(202);
        // The earlier attempt's thread goes on: no second thread for one delivery.
        expect(retried.body.threadId).toBe(runThread);
        expect((await runOf(retried.body.runId))?.status).toBe('succeeded');
        expect(await tasksIn(runThread, deliveryId)).toBe(1);
        expect((await runsOf(runThread)).map((run) => run.id).sort()).toEqual([earlierRunId, retried.body.runId].sort());
        const again = await deliver(hook, { kind: 'retried', repo: 'r' }, { deliveryId });
        expect(again.status).toBe(409);
        expect(again.body.error.code).toBe('HOOK_DELIVERY_REPLAYED');
        expect(await tasksIn(runThread, deliveryId)).toBe(1);
      }
    });

    it('I11: a delivery accepted once runs once: after its thread is deleted a replay is still refused (409) and the delivery stays listed, its thread marked deleted', async () => {
      const hook = await createHook({});
      const deliveryId = `deleted-${randomUUID()}`;
      const payload = { kind: 'push', repo: 'acme/api' };
      const accepted = await deliver(hook, payload, { deliveryId });
      expect(accepted.status, accepted.text).toBe(202);
      expect((await runOf(accepted.body.runId))?.status).toBe('succeeded');
      const replay = await deliver(hook, payload, { deliveryId });
      expect(replay.status).toBe(409);
      expect(replay.body.error.code).toBe('HOOK_DELIVERY_REPLAYED');
      expect((await server.request('DELETE', `/api/threads/${accepted.body.threadId}`)).status).toBe(204);
      const callsBefore = model.calls.length;
      // Each resend, freshly signed: neither a 404 that forgets the delivery nor a second run.
      for (const attempt of [1, 2, 3]) {
        const resent = await deliver(hook, payload, { deliveryId });
        expect(resent.status, `resend ${attempt}: ${resent.text}`).toBe(409);
        expect(resent.body.error.code, `resend ${attempt}`).toBe('HOOK_DELIVERY_REPLAYED');
      }
      const listed = (await server.request('GET', `/api/hooks/${hook.id}/deliveries`)).body.deliveries as Array<Record<string, unknown>>;
      expect(listed).toEqual([
        { deliveryId, receivedAt: expect.any(String), runId: accepted.body.runId, threadId: accepted.body.threadId, threadDeleted: true, runStatus: 'succeeded', runReason: null },
      ]);
      expect(model.calls.length, 'no model call for a second run').toBe(callsBefore);
      // A delivery whose earlier attempt died before storing its task is still not a replay
      // once that attempt's (empty) thread is deleted: the retry runs it, on a new thread.
      const emptyThread = await newThread();
      const crashed = `crashed-deleted-${randomUUID()}`;
      const earlierRunId = await earlierAttempt(hook, crashed, { receivedAgoMs: 60_000, run: { threadId: emptyThread, status: 'failed' } });
      expect((await server.request('DELETE', `/api/threads/${emptyThread}`)).status).toBe(204);
      const retried = await deliver(hook, payload, { deliveryId: crashed });
      expect(retried.status, retried.text).toBe(202);
      expect(retried.body.runId).not.toBe(earlierRunId);
      expect(retried.body.threadId).not.toBe(emptyThread);
      expect((await runOf(retried.body.runId))?.status).toBe('succeeded');
      expect(await tasksIn(retried.body.threadId, crashed)).toBe(1);
      const again = await deliver(hook, payload, { deliveryId: crashed });
      expect(again.status).toBe(409);
      expect(again.body.error.code).toBe('HOOK_DELIVERY_REPLAYED');
    });

    it('I11: a delivery whose run ends before its task is stored is not accepted: 503 HOOK_TASK_NOT_STORED, nothing half-written (its id is forgotten), and the sender\'s retry runs it once', async () => {
      const threadId = await newThread();
      const hook = await createHook({ threadId });
      const deliveryId = `blip-${randomUUID()}`;
      // Nothing of the thread can be written (its input, its checkpoints): a storage blip.
      const saver = server.storage.checkpointer as unknown as Record<string, unknown>;
      const own = Object.getPrototypeOf(saver) as Record<string, (...args: unknown[]) => Promise<unknown>>;
      saver.put = function (this: unknown, config: { configurable?: Record<string, unknown> }, ...rest: unknown[]) {
        if (config.configurable?.thread_id === threadId) return Promise.reject(new Error('disk I/O error'));
        return own.put!.call(this, config, ...rest);
      };
      saver.storeInput = function (this: unknown, thread: unknown, ...rest: unknown[]) {
        if (thread === threadId) return Promise.reject(new Error('disk I/O error'));
        return own.storeInput!.call(this, thread, ...rest);
      };
      let refused: Awaited<ReturnType<typeof deliver>>;
      try {
        refused = await deliver(hook, { kind: 'blip', repo: 'r' }, { deliveryId });
      } finally {
        delete saver.put;
        delete saver.storeInput;
      }
      expect(refused.status, refused.text).toBe(503);
      expect(refused.body.error.code).toBe('HOOK_TASK_NOT_STORED');
      expect(await tasksIn(threadId, deliveryId)).toBe(0);
      // Nothing was accepted, so the sender's retry is a first delivery, not a replay.
      const retried = await deliver(hook, { kind: 'blip', repo: 'r' }, { deliveryId });
      expect(retried.status, retried.text).toBe(202);
      expect((await runOf(retried.body.runId))?.status).toBe('succeeded');
      expect(await tasksIn(threadId, deliveryId)).toBe(1);
    });

    it('I11: a retry while the earlier attempt may still be storing its task answers 409 HOOK_DELIVERY_PENDING and starts nothing; one that never recorded a run for over an hour is taken over', async () => {
      const threadId = await newThread();
      const hook = await createHook({ threadId });
      const running = `running-${randomUUID()}`;
      await earlierAttempt(hook, running, { receivedAgoMs: 2 * 60 * 60_000, run: { threadId, status: 'running' } });
      const recent = `recent-${randomUUID()}`;
      const recentRunId = await earlierAttempt(hook, recent, { receivedAgoMs: 5_000 });
      for (const deliveryId of [running, recent]) {
        const response = await deliver(hook, { kind: 'pending', repo: 'r' }, { deliveryId });
        expect(response.status, deliveryId).toBe(409);
        expect(response.body.error.code, deliveryId).toBe('HOOK_DELIVERY_PENDING');
      }
      expect((await runsOf(threadId)).filter((run) => run.status !== 'running')).toEqual([]);
      // An hour on, with still no run recorded, the earlier attempt is taken for dead.
      await (server.storage as SqlStorage).context.db
        .withTables<HookTables>()
        .updateTable('hook_deliveries')
        .set({ received_at: new Date(Date.now() - 2 * 60 * 60_000).toISOString() })
        .where('hook_id', '=', hook.id)
        .where('delivery_id', '=', recent)
        .execute();
      const taken = await deliver(hook, { kind: 'pending', repo: 'r' }, { deliveryId: recent });
      expect(taken.status, taken.text).toBe(202);
      expect(taken.body.runId).not.toBe(recentRunId);
      expect((await runOf(taken.body.runId))?.status).toBe('succeeded');
      expect(await tasksIn(threadId, recent)).toBe(1);
    });

    it('lists a hook\'s accepted deliveries newest first, each with its run; refused ones are not listed', async () => {
      const hook = await createHook({});
      const first = await deliver(hook, { kind: 'first', repo: 'r' }, { deliveryId: `list-a-${randomUUID()}` });
      const second = await deliver(hook, { kind: 'second', repo: 'r' }, { deliveryId: `list-b-${randomUUID()}` });
      expect(first.status).toBe(202);
      expect(second.status).toBe(202);
      expect((await deliver(hook, { kind: 'forged', repo: 'r' }, { signature: 'v1,AAAA' })).status).toBe(401);
      await runOf(first.body.runId);
      await runOf(second.body.runId);
      const listed = await server.request('GET', `/api/hooks/${hook.id}/deliveries`);
      expect(listed.status).toBe(200);
      const deliveries = listed.body.deliveries as Array<Record<string, any>>;
      // Same-second deliveries may tie on received_at: compare as a set, then check the order by time.
      expect(deliveries.map((delivery) => delivery.deliveryId).sort()).toEqual([first.body.deliveryId, second.body.deliveryId].sort());
      expect(Date.parse(deliveries[0]!.receivedAt)).toBeGreaterThanOrEqual(Date.parse(deliveries[1]!.receivedAt));
      const ofFirst = deliveries.find((delivery) => delivery.deliveryId === first.body.deliveryId);
      expect(ofFirst).toEqual({ deliveryId: first.body.deliveryId, receivedAt: expect.any(String), runId: first.body.runId, threadId: first.body.threadId, threadDeleted: false, runStatus: 'succeeded', runReason: null });
      expect((await server.request('GET', `/api/hooks/${hook.id}/deliveries?limit=1`)).body.deliveries).toHaveLength(1);
      expect((await server.request('GET', `/api/hooks/${hook.id}/deliveries?limit=0`)).status).toBe(400);
    });

    it('I12: another user gets 404 for a hook\'s deliveries, and sees only their own hook\'s', async () => {
      const hook = await createHook({});
      expect((await deliver(hook, { kind: 'private', repo: 'r' })).status).toBe(202);
      const refused = await server.request('GET', `/api/hooks/${hook.id}/deliveries`, { token: BOB.token });
      expect(refused.status).toBe(404);
      expect(refused.body.error.code).toBe('HOOK_NOT_FOUND');
      const bobHook = await createHook({}, BOB.token);
      expect((await server.request('GET', `/api/hooks/${bobHook.id}/deliveries`, { token: BOB.token })).body.deliveries).toEqual([]);
    });

    it('a hook still verifies its deliveries after a restart (the sealing key persists)', async () => {
      const hook = await createHook({});
      server = await server.restart();
      const response = await deliver(hook, { kind: 'after', repo: 'restart' });
      expect(response.status, response.text).toBe(202);
      expect(await runOf(response.body.runId)).toMatchObject({ status: 'succeeded', trigger: 'webhook' });
    });

    it('a deleted hook takes no more deliveries', async () => {
      const hook = await createHook({});
      expect((await server.request('DELETE', `/api/hooks/${hook.id}`)).status).toBe(204);
      const response = await deliver(hook, { kind: 'x', repo: 'y' });
      expect(response.status).toBe(404);
      expect(response.body.error.code).toBe('HOOK_NOT_FOUND');
    });
  });
}
