import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchWithinLimits, isHostAllowed } from '../../src/agent/tools/http-fetch.js';
import { fetchToolSettingsSchema } from '../../src/domain/planner/planner-settings.js';

describe('the planner http_fetch tool', () => {
  let server: Server;
  let base: string;
  beforeAll(async () => {
    server = createServer((request, response) => {
      if (request.url === '/big') {
        response.writeHead(200, { 'content-type': 'text/plain' });
        response.end('x'.repeat(10_000));
      } else if (request.url === '/away') {
        response.writeHead(302, { location: 'http://elsewhere.invalid/' });
        response.end();
      } else if (request.url === '/hop') {
        response.writeHead(302, { location: '/json' });
        response.end();
      } else if (request.url === '/json') {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end('{"ok":true}');
      } else if (request.url === '/slow') {
        setTimeout(() => response.end('late'), 2_000);
      } else {
        response.writeHead(200, { 'content-type': 'image/png' });
        response.end(Buffer.alloc(64));
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const settings = (overrides: Record<string, unknown> = {}) => fetchToolSettingsSchema.parse({ allowedHosts: ['127.0.0.1'], ...overrides });

  it('fetches allowed hosts, following redirects that stay on the allow-list', async () => {
    expect(await fetchWithinLimits(`${base}/hop`, settings())).toMatchObject({ status: 200, body: '{"ok":true}', truncated: false, url: `${base}/json` });
  });

  it('refuses hosts off the allow-list, also behind a redirect, and non-http URLs', async () => {
    await expect(fetchWithinLimits(`${base}/json`, settings({ allowedHosts: ['example.com'] }))).rejects.toThrow(/not on this agent's fetch allow-list/);
    await expect(fetchWithinLimits(`${base}/away`, settings())).rejects.toThrow(/"elsewhere.invalid" is not on this agent's fetch allow-list/);
    await expect(fetchWithinLimits('file:///etc/passwd', settings())).rejects.toThrow(/only http and https/);
    await expect(fetchWithinLimits(`http://user:pw@127.0.0.1/`, settings())).rejects.toThrow(/credentials/);
  });

  it('cuts bodies at the size cap and says so; does not show binary bodies', async () => {
    const big = await fetchWithinLimits(`${base}/big`, settings({ maxBytes: 1024 }));
    expect(big.body).toHaveLength(1024);
    expect(big.truncated).toBe(true);
    expect((await fetchWithinLimits(`${base}/binary`, settings())).body).toBe('[image/png content, 64 bytes not shown]');
  });

  it('gives up after the timeout', async () => {
    await expect(fetchWithinLimits(`${base}/slow`, settings({ timeoutMs: 200 }))).rejects.toThrow(/timed out after 200 ms/);
  });

  it('matches hosts exactly, a port when given, and subdomains only with *.', () => {
    expect(isHostAllowed(new URL('https://example.com/a'), ['example.com'])).toBe(true);
    expect(isHostAllowed(new URL('https://evil-example.com/'), ['example.com'])).toBe(false);
    expect(isHostAllowed(new URL('https://api.example.com/'), ['example.com'])).toBe(false);
    expect(isHostAllowed(new URL('https://api.example.com/'), ['*.example.com'])).toBe(true);
    expect(isHostAllowed(new URL('https://example.com/'), ['*.example.com'])).toBe(false);
    expect(isHostAllowed(new URL('http://127.0.0.1:8080/'), ['127.0.0.1:8080'])).toBe(true);
    expect(isHostAllowed(new URL('http://127.0.0.1:9090/'), ['127.0.0.1:8080'])).toBe(false);
  });
});
