import { afterAll, beforeAll, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { makeTempDir, removeTempDir } from '../helpers/temp-dir.js';
import { parseSse } from '../helpers/test-server.js';
import { spawnServer, startServerProcess, type ServerProcess } from '../helpers/server-process.js';

/**
 * The real server process, end to end: HTTP, SSE, WebSocket, restart. A process start
 * loads LangChain and compiles TypeScript on the fly, which takes seconds on a busy
 * 2-core machine: hence the generous per-test timeout (a bound, not a speed target).
 */
const PROCESS_TEST_TIMEOUT_MS = 180_000;
export function serverProcessSuite(environment: () => Promise<{ env: Record<string, string>; cleanup: () => Promise<void> }>): void {
  let place: { env: Record<string, string>; cleanup: () => Promise<void> };
  let dataDir: string;
  let server: ServerProcess | undefined;

  beforeAll(async () => {
    dataDir = await makeTempDir('vigil-e2e-');
    place = await environment();
  });
  afterAll(async () => {
    await server?.stop('SIGKILL');
    await place?.cleanup();
    await removeTempDir(dataDir);
  });

  it('serves a thread over HTTP, SSE and WebSocket, and after a restart reads the same history', async () => {
    server = await startServerProcess({ VIGIL_DATA_DIR: dataDir, ...place.env });
    const created = await fetch(`${server.url}/api/threads`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ title: 'e2e' }) });
    expect(created.status).toBe(201);
    const thread = (await created.json()) as { id: string };

    const sse = await fetch(`${server.url}/api/threads/${thread.id}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ content: 'hello over SSE' }),
    });
    const events = parseSse(await sse.text());
    expect(events.map((event) => event.event)).toEqual(expect.arrayContaining(['run.start', 'message.delta', 'message.end', 'run.end']));
    expect(events.at(-1)?.data.status).toBe('succeeded');

    const socket = new WebSocket(`${server.url.replace('http', 'ws')}/api/ws`);
    await new Promise((resolve, reject) => {
      socket.once('open', resolve);
      socket.once('error', reject);
    });
    const received: Array<{ type: string; message?: { role: string; content: unknown } }> = [];
    const runEnded = new Promise<void>((resolve) =>
      socket.on('message', (data) => {
        const event = JSON.parse(String(data)) as { type: string };
        received.push(event);
        if (event.type === 'run.end') resolve();
      }),
    );
    socket.send(JSON.stringify({ type: 'message.send', threadId: thread.id, content: 'hello over WebSocket' }));
    await runEnded;
    socket.close();
    expect(received[0]?.type).toBe('run.start');
    expect(received.filter((event) => event.type === 'message.end').map((event) => event.message?.role)).toEqual(['user', 'assistant']);

    const before = await (await fetch(`${server.url}/api/threads/${thread.id}/history`)).json();
    expect((before as { messages: unknown[] }).messages).toHaveLength(4);
    const stopped = await server.stop('SIGTERM');
    expect(stopped.code).toBe(0);

    server = await startServerProcess({ VIGIL_DATA_DIR: dataDir, ...place.env });
    const after = await (await fetch(`${server.url}/api/threads/${thread.id}/history`)).json();
    expect(after).toEqual(before);
    await server.stop('SIGTERM');
  }, PROCESS_TEST_TIMEOUT_MS);

  it('refuses to start on a bad setting, naming it, with a non-zero exit', async () => {
    const { exited, output } = spawnServer({ VIGIL_DATA_DIR: dataDir, ...place.env, VIGIL_PORT: 'not-a-port' });
    const { code } = await exited;
    expect(code).not.toBe(0);
    expect(output()).toContain('VIGIL_PORT');
  }, PROCESS_TEST_TIMEOUT_MS);

  it('I12: refuses to bind a non-loopback host without tokens', async () => {
    const { exited, output } = spawnServer({ VIGIL_DATA_DIR: dataDir, ...place.env, VIGIL_HOST: '0.0.0.0' });
    const { code } = await exited;
    expect(code).not.toBe(0);
    expect(output()).toContain('VIGIL_AUTH_TOKENS');
  }, PROCESS_TEST_TIMEOUT_MS);
}
