import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { errorBody, PATH_PARAM_MAX_LENGTH } from '../../src/http/schemas.js';
import { OPERATIONS } from '../../src/http/openapi-operations.js';
import { ALICE, BOB, startTestServer, type TestServer } from '../helpers/test-server.js';

type Json = Record<string, any>;

describe('the API document', () => {
  let server: TestServer;
  let document: Json;
  beforeAll(async () => {
    server = await startTestServer({ kind: 'sqlite' });
    // Public although the server has auth tokens: it holds no user data (README, API).
    const response = await server.request('GET', '/api/openapi.json', { token: '' });
    expect(response.status).toBe(200);
    document = response.body;
  });
  afterAll(async () => {
    await server?.destroy();
  });

  const operations = () =>
    Object.entries<Json>(document.paths).flatMap(([path, item]) =>
      Object.entries<Json>(item)
        .filter(([method]) => ['get', 'put', 'post', 'patch', 'delete'].includes(method))
        .map(([method, operation]) => ({ key: `${method.toUpperCase()} ${path}`, operation })),
    );

  it('is lint-clean under Redocly\'s recommended rules (0 errors)', async () => {
    const config = await createConfig({ extends: ['recommended'] });
    const problems = await lintFromString({ source: JSON.stringify(document), absoluteRef: 'openapi.json', config });
    const errors = problems.filter((problem) => problem.severity === 'error').map((problem) => `${problem.ruleId}: ${problem.message} at ${problem.location[0]?.pointer}`);
    expect(errors).toEqual([]);
  });

  it('gives every operation an operationId, a summary and tags from the operations table, and declares servers', () => {
    expect(document.servers).toEqual([expect.objectContaining({ url: '/' })]);
    for (const { key, operation } of operations()) {
      expect(OPERATIONS[key], `${key} has no entry in src/http/openapi-operations.ts`).toBeDefined();
      expect(operation.operationId).toBe(OPERATIONS[key]!.id);
      expect(operation.summary).toBeTruthy();
      expect(operation.tags?.length).toBeGreaterThan(0);
    }
    const ids = operations().map(({ operation }) => operation.operationId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('bounds every path parameter, none beyond what the router lets through (maxParamLength)', () => {
    const bounds = operations().flatMap(({ key, operation }) =>
      ((operation.parameters ?? []) as Json[]).filter((parameter) => parameter.in === 'path').map((parameter) => ({ key, name: parameter.name, maxLength: parameter.schema?.maxLength })),
    );
    expect(bounds.length).toBeGreaterThan(0);
    for (const { key, name, maxLength } of bounds) {
      expect(maxLength, `${key} {${name}}`).toEqual(expect.any(Number));
      expect(maxLength, `${key} {${name}}`).toBeLessThanOrEqual(PATH_PARAM_MAX_LENGTH);
    }
    // The bound is no larger than it needs to be: the longest parameter reaches it.
    expect(Math.max(...bounds.map((bound) => bound.maxLength))).toBe(PATH_PARAM_MAX_LENGTH);
  });

  it('says /healthz and /readyz need no auth, and describes streaming responses', () => {
    expect(document.paths['/healthz'].get.security).toEqual([]);
    expect(document.paths['/readyz'].get.security).toEqual([]);
    expect(document.paths['/api/threads/{threadId}/messages'].post.responses['200'].content['text/event-stream']).toBeDefined();
    const created = document.paths['/api/threads'].post.responses;
    for (const status of ['201', '400', '401', '413', '415', '500']) expect(created[status], status).toBeDefined();
    expect(created['400'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' });
    expect(document.paths['/api/hooks/{hookId}'].delete.responses['204']).toBeDefined();
  });

  it('every response the server gives is one the document declares, with the documented error body', async () => {
    const thread = await server.request('POST', '/api/threads', { body: { title: 'documented' } });
    const agent = await server.request('POST', '/api/agents', { body: { id: 'doc-agent', name: 'Doc' } });
    const calls: Array<Promise<{ status: number; body: any }>> = [
      server.request('GET', '/healthz', { token: '' }),
      server.request('GET', '/readyz', { token: '' }),
      server.request('GET', '/api/threads'),
      server.request('GET', '/api/threads', { token: '' }), // 401
      server.request('GET', `/api/threads/${thread.body.id}`),
      server.request('GET', `/api/threads/${thread.body.id}`, { token: BOB.token }), // 404 (I12)
      server.request('GET', `/api/threads/${thread.body.id}/history?limit=0`), // 400
      server.request('POST', `/api/threads/${thread.body.id}/messages`, { body: { content: 'hello' } }),
      server.request('POST', `/api/threads/${thread.body.id}/messages`, { body: { content: 'x', bogus: 1 } }), // 400
      server.request('POST', `/api/threads/${thread.body.id}/messages`, { rawBody: 'plain', headers: { 'content-type': 'text/plain' } }), // 415
      server.request('POST', '/api/threads', { rawBody: JSON.stringify({ title: 'x'.repeat(2_000_000) }), headers: { 'content-type': 'application/json' } }), // 413
      server.request('POST', '/api/agents', { body: { id: 'doc-agent', name: 'Again' } }), // 409
      server.request('GET', '/api/agents/doc-agent'),
      server.request('GET', '/api/agents/doc-agent/autonomy'),
      server.request('GET', `/api/threads/${thread.body.id}/runs`),
      server.request('GET', `/api/threads/${thread.body.id}/timers`),
      server.request('DELETE', '/api/hooks/no-such-hook'),
      server.request('GET', '/api/schedules'),
      server.request('GET', '/api/no-such-route'),
    ];
    const responses = await Promise.all(calls);
    expect(agent.status).toBe(201);
    expect(responses.map((response) => response.status)).toEqual(expect.arrayContaining([200, 401, 404, 400, 415, 413, 409]));
    for (const response of responses.filter((candidate) => candidate.status >= 400)) expect(errorBody.safeParse(response.body).success, JSON.stringify(response.body)).toBe(true);
    expect(server.undocumented).toEqual([]);
    expect(ALICE.id).toBe('alice');
  });

  it('serves an interactive API reference at /docs without auth, from local assets', async () => {
    const page = await server.request('GET', '/docs/', { token: '' });
    expect(page.status).toBe(200);
    expect(page.text).toContain('swagger-ui');
    expect(page.text).not.toMatch(/https?:\/\/(?!127\.0\.0\.1|localhost)[^"']*\.(js|css)/);
  });
});
