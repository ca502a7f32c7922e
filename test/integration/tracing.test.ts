import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';

type Json = Record<string, any>;

/** A loopback OTLP/HTTP collector that keeps every span it is sent. */
async function startCollector(): Promise<{ url: string; spans: Json[]; close(): Promise<void> }> {
  const spans: Json[] = [];
  const server: Server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    request.on('end', () => {
      if (request.url === '/v1/traces') {
        const parsed = JSON.parse(body) as Json;
        for (const resource of parsed.resourceSpans ?? []) for (const scope of resource.scopeSpans ?? []) for (const span of scope.spans ?? []) spans.push({ ...span, resource: resource.resource });
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, spans, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

function attribute(span: Json, key: string): unknown {
  const found = (span.attributes as Json[] | undefined)?.find((entry) => entry.key === key);
  return found ? Object.values(found.value as Json)[0] : undefined;
}

describe('OpenTelemetry traces (OTEL_EXPORTER_OTLP_ENDPOINT)', () => {
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let server: TestServer;
  beforeAll(async () => {
    collector = await startCollector();
    server = await startTestServer({ kind: 'sqlite' }, { environment: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_SERVICE_NAME: 'vigil-under-test' } });
  });
  afterAll(async () => {
    await server?.destroy();
    await collector?.close();
  });

  it('exports one trace per run: a vigil.run root with the run\'s ids, graph nodes and the model call under it', async () => {
    const thread = await server.request('POST', '/api/threads', { body: {} });
    const sent = await server.request('POST', `/api/threads/${thread.body.id}/messages`, { body: { content: 'trace me' } });
    expect(sent.status).toBe(200);
    const runId = sent.body.run.id as string;
    await waitFor(() => collector.spans.some((span) => span.name === 'vigil.run' && attribute(span, 'vigil.run_id') === runId), 15_000, 'the run\'s root span');
    const root = collector.spans.find((span) => span.name === 'vigil.run' && attribute(span, 'vigil.run_id') === runId)!;
    expect(root.parentSpanId ?? '').toBe('');
    expect(attribute(root, 'vigil.thread_id')).toBe(thread.body.id);
    expect(attribute(root, 'vigil.agent_id')).toBe('default');
    expect(attribute(root, 'vigil.trigger')).toBe('user');
    expect(JSON.stringify(root.resource)).toContain('vigil-under-test');
    await waitFor(() => collector.spans.some((span) => span.traceId === root.traceId && String(span.name).startsWith('gen_ai.chat')), 15_000, 'the model span');
    const trace = collector.spans.filter((span) => span.traceId === root.traceId);
    const node = trace.find((span) => span.name === 'langgraph.node respond');
    const model = trace.find((span) => String(span.name).startsWith('gen_ai.chat'));
    expect(node?.parentSpanId).toBe(root.spanId);
    expect(model?.parentSpanId).toBe(node?.spanId);
    expect((model?.events as Json[]).map((event) => event.name)).toContain('gen_ai.first_token');
    // Another run is another trace.
    const again = await server.request('POST', `/api/threads/${thread.body.id}/messages`, { body: { content: 'and again' } });
    await waitFor(() => collector.spans.some((span) => span.name === 'vigil.run' && attribute(span, 'vigil.run_id') === again.body.run.id), 15_000, 'the second run\'s root span');
    const second = collector.spans.find((span) => span.name === 'vigil.run' && attribute(span, 'vigil.run_id') === again.body.run.id)!;
    expect(second.traceId).not.toBe(root.traceId);
  });
});
