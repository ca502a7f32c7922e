import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScriptedOpenAiServer } from '../helpers/openai-server.js';
import { startScriptedModelServer, stopScriptedModelServer } from '../helpers/scripted-model-server.js';
import { ALICE, BOB, startTestServer, type Backend, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';

/** One sample's value from a Prometheus exposition, or undefined when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const labelText = /\{(.*)\}/.exec(line)?.[1] ?? '';
    if (Object.entries(labels).every(([key, value]) => labelText.includes(`${key}="${value}"`))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

export function metricsSuite(backend: () => Backend): void {
  describe('/metrics beside the API', () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer(backend());
    });
    afterAll(async () => {
      await server?.destroy();
    });

    const scrape = async () => {
      const response = await server.request('GET', '/metrics');
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toContain('text/plain');
      return response.text;
    };

    it('is protected like the API when auth is on (no token: 401); any user may read it', async () => {
      expect((await server.request('GET', '/metrics', { token: '' })).status).toBe(401);
      expect((await server.request('GET', '/metrics', { token: BOB.token })).status).toBe(200);
    });

    it('counts HTTP requests by route pattern and status, runs by trigger and outcome, and model calls by provider', async () => {
      const thread = await server.request('POST', '/api/threads', { body: {} });
      expect(thread.status).toBe(201);
      const sent = await server.request('POST', `/api/threads/${thread.body.id}/messages`, { body: { content: 'count me' } });
      expect(sent.status).toBe(200);
      expect((await server.request('GET', '/api/threads/no-such-thread')).status).toBe(404);
      const text = await scrape();
      expect(sample(text, 'vigil_http_request_duration_seconds_count', { method: 'POST', route: '/api/threads/:threadId/messages', status: '200' })).toBeGreaterThanOrEqual(1);
      expect(sample(text, 'vigil_http_request_duration_seconds_count', { route: '/api/threads/:threadId', status: '404' })).toBeGreaterThanOrEqual(1);
      // Never the raw URL: ids in paths would make labels grow without bound.
      expect(text).not.toContain(thread.body.id);
      expect(sample(text, 'vigil_run_duration_seconds_count', { trigger: 'user', status: 'succeeded' })).toBeGreaterThanOrEqual(1);
      expect(sample(text, 'vigil_model_call_duration_seconds_count', { provider: 'demo', outcome: 'ok' })).toBeGreaterThanOrEqual(1);
      expect(sample(text, 'vigil_checkpoint_write_duration_seconds_count')).toBeGreaterThanOrEqual(1);
      expect(sample(text, 'vigil_checkpoint_written_bytes_total')).toBeGreaterThan(100);
      expect(sample(text, 'vigil_queue_depth', { state: 'ready' })).toBeGreaterThanOrEqual(0);
      expect(sample(text, 'nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);
    });

    it('counts autonomy decisions and timer lag when a follow-up fires', async () => {
      const agent = await server.request('POST', '/api/agents', {
        body: { id: 'metered', name: 'Metered', autonomy: { enabled: true, delaysMs: { check_in: 200, question_unanswered: 200, task_incomplete: 200, waiting_for_decision: 200 }, minDelayMs: 10, maxPerSilence: 1 } },
      });
      expect(agent.status).toBe(201);
      const thread = await server.request('POST', '/api/threads', { body: { agentId: 'metered' } });
      await server.request('POST', `/api/threads/${thread.body.id}/messages`, { body: { content: 'a question for later?' } });
      await waitFor(async () => (sample(await scrape(), 'vigil_autonomy_decisions_total', { decision: 'fired' }) ?? 0) >= 1, 20_000, 'a follow-up to fire');
      const text = await scrape();
      expect(sample(text, 'vigil_autonomy_decisions_total', { decision: 'scheduled' })).toBeGreaterThanOrEqual(1);
      expect(sample(text, 'vigil_timer_lag_seconds_count')).toBeGreaterThanOrEqual(1);
      await waitFor(async () => (sample(await scrape(), 'vigil_run_duration_seconds_count', { trigger: 'autonomy' }) ?? 0) >= 1, 20_000, 'the follow-up run to end');
    });

    it('counts open streams while an SSE response is open', async () => {
      const thread = await server.request('POST', '/api/threads', { body: {} });
      const response = await fetch(`${server.url}/api/threads/${thread.body.id}/messages`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ALICE.token}`, 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify({ content: 'stream me' }),
      });
      expect(response.status).toBe(200);
      await response.text();
      await waitFor(async () => sample(await scrape(), 'vigil_active_streams', { kind: 'sse' }) === 0, 10_000, 'the stream gauge to drop back');
    });
  });

  describe('model calls of an OpenAI-compatible model, on an agent with tools', () => {
    let model: ScriptedOpenAiServer;
    let server: TestServer;
    beforeAll(async () => {
      ({ model, server } = await startScriptedModelServer(backend()));
    });
    afterAll(() => stopScriptedModelServer({ model, server }));

    it('are counted, with their tokens and errors (ChatOpenAI binding tools made a model without the observer: none were)', async () => {
      const thread = await server.request('POST', '/api/threads', { body: {} });
      model.script({ text: 'counted', usage: { prompt_tokens: 40, completion_tokens: 3 } }, { status: 500, errorMessage: 'the provider broke' });
      const answered = await server.request('POST', `/api/threads/${thread.body.id}/messages`, { body: { content: 'count this call' } });
      expect(answered.body.run.status).toBe('succeeded');
      // The call really went out with tools bound (the path that lost the observer).
      expect(model.requests[0]?.body.tools?.length ?? 0).toBeGreaterThan(0);
      const failed = await server.request('POST', `/api/threads/${thread.body.id}/messages`, { body: { content: 'and this failure' } });
      expect(failed.body.run.status).toBe('failed');
      const text = (await server.request('GET', '/metrics')).text;
      const labels = { provider: 'openai', model: 'scripted' };
      expect(sample(text, 'vigil_model_call_duration_seconds_count', { ...labels, outcome: 'ok' })).toBe(1);
      expect(sample(text, 'vigil_model_call_duration_seconds_count', { ...labels, outcome: 'error' })).toBe(1);
      expect(sample(text, 'vigil_model_errors_total', labels)).toBe(1);
      expect(sample(text, 'vigil_model_tokens_total', { ...labels, direction: 'input' })).toBe(40);
      expect(sample(text, 'vigil_model_tokens_total', { ...labels, direction: 'output' })).toBe(3);
    });
  });

  describe('/metrics on a port of its own (VIGIL_METRICS_PORT)', () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer(backend(), { environment: { VIGIL_METRICS_PORT: '0' } });
    });
    afterAll(async () => {
      await server?.destroy();
    });

    it('serves metrics there without a token, and not beside the API', async () => {
      const line = server.logs.find((entry) => entry.msg === 'metrics on a port of their own');
      expect(line).toBeDefined();
      const response = await fetch(`${String(line!.address)}/metrics`);
      expect(response.status).toBe(200);
      expect(await response.text()).toContain('vigil_http_request_duration_seconds');
      expect((await server.request('GET', '/metrics')).status).toBe(404);
    });
  });
}
