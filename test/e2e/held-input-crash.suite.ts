import { afterAll, beforeAll, expect, it } from 'vitest';
import { ScriptedOpenAiServer, type RecordedRequest } from '../helpers/openai-server.js';
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { makeTempDir, removeTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * A chat turn stores one checkpoint: the person's message is written to the thread's history
 * (durable) as the run takes it, and the checkpoint holding it is stored with the reply
 * (held-checkpoint-writes.ts, HOLD_INPUT_STEP). This kills the server process (SIGKILL)
 * while the model is answering, between the two: after a restart the message is in history
 * once, and the next turn's model call receives it before the new message, in order — the
 * agent does not lose what the person said.
 */
const PROCESS_TEST_TIMEOUT_MS = 240_000;

export function heldInputCrashSuite(environment: () => Promise<{ env: Record<string, string>; cleanup: () => Promise<void> }>): void {
  let place: { env: Record<string, string>; cleanup: () => Promise<void> };
  let dataDir: string;
  let provider: ScriptedOpenAiServer;
  let server: ServerProcess | undefined;
  const lastUserText = (request: RecordedRequest) => String([...request.messages].reverse().find((message) => message.role === 'user')?.content ?? '');

  beforeAll(async () => {
    dataDir = await makeTempDir('vigil-e2e-');
    place = await environment();
    provider = await ScriptedOpenAiServer.start({ fallback: (request) => (lastUserText(request).includes('[hang]') ? { hang: true } : { text: 'Noted.' }) });
  });
  afterAll(async () => {
    await server?.stop('SIGKILL');
    await provider?.close();
    await place?.cleanup();
    await removeTempDir(dataDir);
  });

  it('I3: SIGKILL while the model answers: the person\'s message is in history once, with the id and metadata it had, and the next turn\'s model call gets it first', async () => {
    const env = { VIGIL_DATA_DIR: dataDir, VIGIL_MODEL: 'openai:scripted-model', OPENAI_BASE_URL: provider.baseUrl, ...place.env };
    server = await startServerProcess(env);
    const api = (url: string) => async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${url}${path}`, body === undefined ? { method } : { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      return { status: response.status, body: (await response.json()) as any };
    };
    let call = api(server.url);
    const threadId = (await call('POST', '/api/threads', {})).body.id as string;
    expect((await call('POST', `/api/threads/${threadId}/messages`, { content: 'Hello there.' })).status).toBe(200);

    const first = 'Please remember: the gate code is 4471 [hang]';
    void call('POST', `/api/threads/${threadId}/messages`, { content: first }).catch(() => undefined); // the killed process never answers it
    await waitFor(() => provider.requests.some((request) => lastUserText(request) === first), 60_000, 'the model to be asked about the message');
    // Durable before the model answers: history has it while the model call hangs.
    const during = await call('GET', `/api/threads/${threadId}/history?limit=50`);
    const accepted = (during.body.messages as Array<{ id: string; content: unknown; metadata?: unknown }>).find((message) => message.content === first);
    expect(accepted).toBeDefined();
    await server.stop('SIGKILL');

    server = await startServerProcess(env);
    call = api(server.url);
    await waitFor(async () => ((await call('GET', `/api/threads/${threadId}/runs`)).body.runs as Array<{ status: string }>).every((run) => run.status !== 'running'), 60_000, 'the cut run to be ended');
    const asked = provider.requests.length;
    const next = await call('POST', `/api/threads/${threadId}/messages`, { content: 'What was the gate code?' });
    expect(next.status).toBe(200);
    expect(next.body.run.status).toBe('succeeded');
    const request = provider.requests.slice(asked).find((recorded) => lastUserText(recorded) === 'What was the gate code?');
    const userTexts = request!.messages.filter((message) => message.role === 'user').map((message) => String(message.content));
    expect(userTexts.slice(-3)).toEqual(['Hello there.', first, 'What was the gate code?']);

    const history = await call('GET', `/api/threads/${threadId}/history?limit=50`);
    expect(history.body.messages.map((message: { role: string; content: unknown }) => [message.role, message.content])).toEqual([
      ['user', 'Hello there.'],
      ['assistant', 'Noted.'],
      ['user', first],
      ['user', 'What was the gate code?'],
      ['assistant', 'Noted.'],
    ]);
    // Kept as it was accepted: the same id, the same metadata.
    const kept = (history.body.messages as Array<{ id: string; content: unknown; metadata?: unknown }>).find((message) => message.content === first);
    expect({ id: kept?.id, metadata: kept?.metadata }).toEqual({ id: accepted!.id, metadata: accepted!.metadata });
    // The thread's state (the LangGraph protocol's view) holds them in the same order, the accepted one under its id.
    const state = await call('GET', `/threads/${threadId}/state`);
    const humans = (state.body.values.messages as Array<{ type: string; id: string; content: unknown }>).filter((message) => message.type === 'human');
    expect(humans.map((message) => message.content)).toEqual(['Hello there.', first, 'What was the gate code?']);
    expect(humans[1]!.id).toBe(accepted!.id);
  }, PROCESS_TEST_TIMEOUT_MS);
}
