/**
 * Outbound webhooks per agent (issue 16, part 5) against a receiving server on loopback
 * (allowed by VIGIL_OUTBOUND_WEBHOOKS_ALLOW_PRIVATE): Standard Webhooks signatures checked
 * with the `standardwebhooks` package, retries after 500s, attempts listed, a failing
 * webhook disabled with a reason, private addresses refused by default.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HumanMessage } from '@langchain/core/messages';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ScriptedOpenAiServer } from '../helpers/openai-server.js';
import { ALICE, BOB, startTestServer, type Backend, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';

type Json = Record<string, any>;

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export function outboundWebhooksSuite(backend: () => Backend, options: { slowMs: number }): void {
  let model: ScriptedOpenAiServer;
  let server: TestServer;
  let receiver: Server;
  let receiverUrl = '';
  const received: Received[] = [];
  /** Status per path: a queue, the last entry repeating. */
  const statuses = new Map<string, number[]>();
  const waitLong = 20_000 + options.slowMs * 10;

  beforeAll(async () => {
    receiver = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const path = request.url ?? '/';
        received.push({ path, headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
        const queue = statuses.get(path) ?? [200];
        const status = queue.length > 1 ? queue.shift()! : queue[0]!;
        response.writeHead(status).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    model = await ScriptedOpenAiServer.start();
    server = await startTestServer(backend(), {
      environment: { VIGIL_MODEL: 'openai:scripted', OPENAI_BASE_URL: model.baseUrl, VIGIL_OUTBOUND_WEBHOOKS_ALLOW_PRIVATE: 'true' },
      outboundWebhooks: { retryBaseMs: 50, disableAfter: 3 },
    });
  });
  afterAll(async () => {
    await server?.destroy();
    await model?.close();
    receiver?.closeAllConnections();
    await new Promise<void>((resolve) => receiver?.close(() => resolve()));
  });

  async function agentWith(body: Json = {}): Promise<string> {
    const id = `w-${randomUUID().slice(0, 8)}`;
    expect((await server.request('POST', '/api/agents', { body: { id, name: 'hooks', ...body } })).status).toBe(201);
    return id;
  }

  it('I16: approval.requested goes out signed (Standard Webhooks), retried after 500s, every attempt listed', async () => {
    model.reset();
    model.respondWith((request) => (request.messages.at(-1)?.role === 'tool' ? { text: 'done' } : { toolCalls: [{ id: 'call_w', name: 'memory_write', arguments: { content: 'likes tea' } }] }));
    const agentId = await agentWith({ tools: { approval: { memory_write: { attended: 'ask' } } } });
    const path = `/approvals-${randomUUID().slice(0, 6)}`;
    statuses.set(path, [500, 500, 200]);
    const created = await server.request('POST', `/api/agents/${agentId}/webhooks`, { body: { url: `${receiverUrl}${path}`, events: ['approval.requested', 'approval.expired'] } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.secret).toMatch(/^whsec_/);
    const listed = await server.request('GET', `/api/agents/${agentId}/webhooks`);
    expect(JSON.stringify(listed.body)).not.toContain(created.body.secret);

    const threadId = (await server.request('POST', '/api/threads', { body: { agentId } })).body.id;
    const sent = await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'Remember I like tea' } });
    expect(sent.body.run.status).toBe('interrupted');
    await waitFor(() => received.filter((entry) => entry.path === path).length === 3, waitLong, 'three attempts');
    const verifier = new Webhook(created.body.secret);
    const attempts = received.filter((entry) => entry.path === path);
    for (const attempt of attempts) {
      const payload = verifier.verify(attempt.body, attempt.headers as Record<string, string>) as Json;
      expect(payload).toMatchObject({ type: 'approval.requested', data: { threadId, tool: 'memory_write', arguments: { content: 'likes tea' }, status: 'pending' } });
    }
    expect(new Set(attempts.map((attempt) => attempt.headers['webhook-id'])).size).toBe(1); // one message, retried
    expect(() => verifier.verify(attempts[0]!.body.replace('memory_write', 'memory_wipe'), attempts[0]!.headers as Record<string, string>)).toThrow();
    let deliveries: Json[] = [];
    await waitFor(async () => {
      deliveries = (await server.request('GET', `/api/agents/${agentId}/webhooks/${created.body.id}/deliveries`)).body.deliveries;
      return deliveries[0]?.status === 'delivered';
    }, waitLong, 'the delivery to be recorded');
    expect(deliveries[0]!.attempts.map((attempt: Json) => attempt.statusCode)).toEqual([500, 500, 200]);
    expect((await server.request('GET', `/api/agents/${agentId}/webhooks/${created.body.id}/deliveries`, { token: BOB.token })).status).toBe(404);
  });

  it('run.completed goes out for an autonomous run; a webhook that keeps failing is disabled with a reason', async () => {
    model.reset();
    model.respondWith(() => ({ text: 'Scheduled report: all quiet.' }));
    const agentId = await agentWith();
    const path = `/runs-${randomUUID().slice(0, 6)}`;
    statuses.set(path, [503]);
    const created = await server.request('POST', `/api/agents/${agentId}/webhooks`, { body: { url: `${receiverUrl}${path}`, events: ['run.completed'] } });
    const threadId = (await server.request('POST', '/api/threads', { body: { agentId } })).body.id;
    await server.services.conversations.runTriggered(ALICE.id, threadId, { trigger: 'cron', input: new HumanMessage({ content: 'Run the report', additional_kwargs: { synthetic: true, trigger_type: 'cron' } }) });
    await waitFor(() => received.filter((entry) => entry.path === path).length === 3, waitLong, 'three failing attempts');
    const payload = new Webhook(created.body.secret).verify(received.find((entry) => entry.path === path)!.body, received.find((entry) => entry.path === path)!.headers as Record<string, string>) as Json;
    expect(payload).toMatchObject({ type: 'run.completed', data: { threadId, trigger: 'cron', status: 'succeeded', reply: 'Scheduled report: all quiet.' } });
    let webhook: Json = {};
    let delivery: Json = {};
    // Two records: the webhook's (disabled) is written a moment before the delivery's (failed).
    await waitFor(async () => {
      webhook = ((await server.request('GET', `/api/agents/${agentId}/webhooks`)).body.webhooks as Json[])[0]!;
      delivery = ((await server.request('GET', `/api/agents/${agentId}/webhooks/${created.body.id}/deliveries`)).body.deliveries as Json[])[0]!;
      return webhook.enabled === false && delivery.status !== 'pending';
    }, waitLong, 'the webhook to be disabled and its delivery settled');
    expect(webhook.disabledReason).toContain('3 failed delivery attempts');
    expect(delivery).toMatchObject({ status: 'failed', lastError: 'the endpoint answered HTTP 503' });
    // A person's own run sends nothing.
    await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'thanks' } });
    expect(((await server.request('GET', `/api/agents/${agentId}/webhooks/${created.body.id}/deliveries`)).body.deliveries as Json[])).toHaveLength(1);
  });

  it('run.completed goes out, failed, for an autonomous run whose process died and the sweep ended', async () => {
    const agentId = await agentWith();
    const path = `/swept-${randomUUID().slice(0, 6)}`;
    const created = await server.request('POST', `/api/agents/${agentId}/webhooks`, { body: { url: `${receiverUrl}${path}`, events: ['run.completed'] } });
    const threadId = (await server.request('POST', '/api/threads', { body: { agentId } })).body.id;
    // A follow-up's run as a process killed mid-run leaves it: running, its thread lock gone.
    const runId = `run-dead-${randomUUID().slice(0, 8)}`;
    const at = new Date(Date.now() - 60_000).toISOString();
    await server.storage.runs.create({ id: runId, threadId, userId: ALICE.id, agentId, trigger: 'autonomy', meta: {}, correlationId: runId, model: 'scripted', requestedAt: at, startedAt: at });
    expect(await server.services.orphanedRuns.sweepOnce()).toBeGreaterThanOrEqual(1);
    await waitFor(() => received.some((entry) => entry.path === path), waitLong, 'run.completed of the swept run');
    const entry = received.find((candidate) => candidate.path === path)!;
    const payload = new Webhook(created.body.secret).verify(entry.body, entry.headers as Record<string, string>) as Json;
    expect(payload).toMatchObject({ type: 'run.completed', data: { runId, threadId, trigger: 'autonomy', status: 'failed', reason: 'its process ended before the run recorded its end', reply: null } });
  });

  it('deliveries take ?limit like every list (1 to 100): -1, 0, 101, abc or an unknown parameter is 400 VALIDATION_FAILED; another user gets 404', async () => {
    model.reset();
    model.respondWith(() => ({ text: 'Report sent.' }));
    const agentId = await agentWith();
    const created = await server.request('POST', `/api/agents/${agentId}/webhooks`, { body: { url: `${receiverUrl}/limit-${randomUUID().slice(0, 6)}`, events: ['run.completed'] } });
    const deliveries = `/api/agents/${agentId}/webhooks/${created.body.id}/deliveries`;
    for (const query of ['limit=-1', 'limit=0', 'limit=101', 'limit=abc', 'limit=1.5', 'bogus=1']) {
      const refused = await server.request('GET', `${deliveries}?${query}`);
      expect(refused.status, `${query}: ${refused.text}`).toBe(400);
      expect(refused.body.error.code, query).toBe('VALIDATION_FAILED');
    }
    for (const task of ['first report', 'second report']) {
      const threadId = (await server.request('POST', '/api/threads', { body: { agentId } })).body.id;
      await server.services.conversations.runTriggered(ALICE.id, threadId, { trigger: 'cron', input: new HumanMessage({ content: task, additional_kwargs: { synthetic: true, trigger_type: 'cron' } }) });
    }
    await waitFor(async () => (await server.request('GET', deliveries)).body.deliveries.length === 2, waitLong, 'both deliveries recorded');
    const one = await server.request('GET', `${deliveries}?limit=1`);
    expect(one.status).toBe(200);
    expect(one.body.deliveries).toHaveLength(1);
    expect((await server.request('GET', `${deliveries}?limit=100`)).body.deliveries).toHaveLength(2);
    const foreign = await server.request('GET', `${deliveries}?limit=1`, { token: BOB.token });
    expect([foreign.status, foreign.body.error.code]).toEqual([404, 'OUTBOUND_WEBHOOK_NOT_FOUND']);
  });

  it('I11, I12: loopback and private addresses are refused by default; another user cannot subscribe to the agent', async () => {
    const strict = await startTestServer(backend(), { environment: { VIGIL_MODEL: 'openai:scripted', OPENAI_BASE_URL: model.baseUrl } });
    try {
      const id = `w-${randomUUID().slice(0, 8)}`;
      await strict.request('POST', '/api/agents', { body: { id, name: 'strict' } });
      // An IPv4 address inside an IPv6 one is that IPv4 address (the URL parser writes [::ffff:127.0.0.1] as [::ffff:7f00:1]).
      const port = new URL(receiverUrl).port;
      for (const url of [`${receiverUrl}/x`, 'http://10.1.2.3/x', 'http://[::1]:80/x', 'http://localhost:9/x', 'ftp://example.com/x', `http://[::ffff:127.0.0.1]:${port}/x`, `http://[::ffff:7f00:1]:${port}/x`, 'http://[::ffff:a9fe:a9fe]/latest/meta-data', `http://[64:ff9b::7f00:1]:${port}/x`]) {
        const refused = await strict.request('POST', `/api/agents/${id}/webhooks`, { body: { url, events: ['run.completed'] } });
        expect(refused.status, url).toBe(400);
        expect(refused.body.error.code).toBe('OUTBOUND_ADDRESS_REFUSED');
      }
      const foreign = await strict.request('POST', `/api/agents/${id}/webhooks`, { token: BOB.token, body: { url: 'http://93.184.216.34/x', events: ['run.completed'] } });
      expect(foreign.status).toBe(404);
      expect(foreign.body.error.code).toBe('AGENT_NOT_FOUND');
      expect((await strict.request('POST', `/api/agents/${id}/webhooks`, { body: { url: 'http://93.184.216.34/x', events: ['run.started'] } })).body.error.code).toBe('VALIDATION_FAILED');
    } finally {
      await strict.destroy();
    }
  });
}
