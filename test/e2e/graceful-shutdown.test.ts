import { afterEach, describe, expect, it } from 'vitest';
import { makeTempDir, removeTempDir } from '../helpers/temp-dir.js';
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * A graceful stop (SIGTERM) with a deadline: running turns may finish within
 * VIGIL_SHUTDOWN_TIMEOUT_MS, the rest are cancelled with a stated reason, nothing accepted
 * is lost, and a second SIGTERM exits at once. Real server processes.
 */
const PROCESS_TEST_TIMEOUT_MS = 180_000;

interface StreamedRun {
  events: Array<{ event: string; data: any }>;
  done: Promise<void>;
}

/** Send a message over SSE and collect its events as they arrive. */
async function streamMessage(server: ServerProcess, threadId: string, content: string): Promise<StreamedRun> {
  const response = await fetch(`${server.url}/api/threads/${threadId}/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({ content }),
  });
  expect(response.status).toBe(200);
  const events: StreamedRun['events'] = [];
  const done = (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event = /^event: (.*)$/m.exec(block)?.[1];
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (event && data) events.push({ event, data: JSON.parse(data) });
      }
    }
  })();
  return { events, done };
}

async function newThread(server: ServerProcess): Promise<string> {
  const created = await fetch(`${server.url}/api/threads`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  expect(created.status).toBe(201);
  return ((await created.json()) as { id: string }).id;
}

describe('graceful shutdown', () => {
  let dataDir: string | undefined;
  let server: ServerProcess | undefined;
  afterEach(async () => {
    await server?.stop('SIGKILL');
    server = undefined;
    if (dataDir) await removeTempDir(dataDir);
    dataDir = undefined;
  });

  it('lets a running turn finish within the grace period, refuses new work, and exits 0', async () => {
    dataDir = await makeTempDir('vigil-stop-');
    server = await startServerProcess({ VIGIL_DATA_DIR: dataDir, VIGIL_DEMO_TOKEN_DELAY_MS: '60', VIGIL_SHUTDOWN_TIMEOUT_MS: '60000' });
    const threadId = await newThread(server);
    const run = await streamMessage(server, threadId, 'finish this please');
    await waitFor(() => run.events.some((event) => event.event === 'message.delta'), 30_000, 'the first token');
    server.child.kill('SIGTERM');
    await waitFor(() => server!.output().includes('stopping gracefully'), 10_000, 'the stop to begin');
    // New work is refused while the turn finishes (503 while closing, or the socket is gone).
    const refused = await fetch(`${server.url}/api/threads`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }).then(
      (response) => response.status,
      () => 'connection refused',
    );
    expect([503, 'connection refused']).toContain(refused);
    await run.done;
    const end = run.events.find((event) => event.event === 'run.end');
    expect(end?.data).toMatchObject({ status: 'succeeded' });
    expect(await server.exited).toMatchObject({ code: 0 });

    // Nothing accepted was lost: after a restart the whole turn is in history.
    server = await startServerProcess({ VIGIL_DATA_DIR: dataDir });
    const history = (await (await fetch(`${server.url}/api/threads/${threadId}/history`)).json()) as { messages: Array<{ role: string; content: string }> };
    expect(history.messages.map((message) => message.role)).toEqual(['user', 'assistant']);
  }, PROCESS_TEST_TIMEOUT_MS);

  it('cancels a turn that outlives the grace period, with the reason, and keeps the person\'s message', async () => {
    dataDir = await makeTempDir('vigil-stop-');
    server = await startServerProcess({ VIGIL_DATA_DIR: dataDir, VIGIL_DEMO_TOKEN_DELAY_MS: '400', VIGIL_SHUTDOWN_TIMEOUT_MS: '300' });
    const threadId = await newThread(server);
    const run = await streamMessage(server, threadId, 'this will take too long');
    await waitFor(() => run.events.some((event) => event.event === 'message.delta'), 30_000, 'the first token');
    server.child.kill('SIGTERM');
    await run.done;
    expect(run.events.find((event) => event.event === 'run.end')?.data).toMatchObject({ status: 'cancelled', reason: 'the server is stopping' });
    expect(await server.exited).toMatchObject({ code: 0 });

    server = await startServerProcess({ VIGIL_DATA_DIR: dataDir });
    const history = (await (await fetch(`${server.url}/api/threads/${threadId}/history`)).json()) as { messages: Array<{ role: string; content: string }> };
    expect(history.messages[0]).toMatchObject({ role: 'user', content: 'this will take too long' });
    const runs = (await (await fetch(`${server.url}/api/threads/${threadId}/runs`)).json()) as { runs: Array<{ status: string }> };
    expect(runs.runs[0]).toMatchObject({ status: 'cancelled' });
  }, PROCESS_TEST_TIMEOUT_MS);

  it('exits at once on a second SIGTERM', async () => {
    dataDir = await makeTempDir('vigil-stop-');
    server = await startServerProcess({ VIGIL_DATA_DIR: dataDir, VIGIL_DEMO_TOKEN_DELAY_MS: '1000', VIGIL_SHUTDOWN_TIMEOUT_MS: '600000' });
    const threadId = await newThread(server);
    const run = await streamMessage(server, threadId, 'a slow one');
    const streamGone = run.done.catch(() => undefined); // the stream is cut when the process exits
    await waitFor(() => run.events.some((event) => event.event === 'message.delta'), 30_000, 'the first token');
    server.child.kill('SIGTERM');
    await waitFor(() => server!.output().includes('stopping gracefully'), 10_000, 'the stop to begin');
    server.child.kill('SIGTERM');
    // Within the ten-minute grace period: only the second signal can have ended it.
    expect(await server.exited).toMatchObject({ code: 1 });
    expect(server.output()).toContain('second signal: exiting at once');
    await streamGone;
  }, PROCESS_TEST_TIMEOUT_MS);
});
