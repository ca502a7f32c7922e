import { afterAll, beforeAll, expect, it } from 'vitest';
import { SUMMARY_REQUEST_MARKER } from '../../src/domain/context/conversation-summary.js';
import { ScriptedOpenAiServer, type RecordedRequest } from '../helpers/openai-server.js';
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { makeTempDir, removeTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * I14: a crash in the middle of a fold loses nothing. The server process calls a scripted
 * OpenAI-compatible model whose summary calls hang; the process is killed (SIGKILL) while
 * one hangs. After a restart every message is still in history, the next turn is
 * answered, and it folds.
 */
const PROCESS_TEST_TIMEOUT_MS = 240_000;

export function contextCrashSuite(environment: () => Promise<{ env: Record<string, string>; cleanup: () => Promise<void> }>): void {
  let place: { env: Record<string, string>; cleanup: () => Promise<void> };
  let dataDir: string;
  let provider: ScriptedOpenAiServer;
  let server: ServerProcess | undefined;
  let hangSummaries = true;
  const isSummary = (request: RecordedRequest) => String(request.messages[0]?.content ?? '').startsWith(SUMMARY_REQUEST_MARKER);

  beforeAll(async () => {
    dataDir = await makeTempDir('vigil-e2e-');
    place = await environment();
    provider = await ScriptedOpenAiServer.start({
      fallback: (request) => (isSummary(request) ? (hangSummaries ? { hang: true } : { text: 'SUMMARY: the garden notes so far.' }) : { text: 'Noted.' }),
    });
  });
  afterAll(async () => {
    await server?.stop('SIGKILL');
    await provider?.close();
    await place?.cleanup();
    await removeTempDir(dataDir);
  });

  it('I14: SIGKILL while a summary call hangs: history keeps every message, and after a restart the next turn answers and folds', async () => {
    const env = { VIGIL_DATA_DIR: dataDir, VIGIL_MODEL: 'openai:scripted-model', OPENAI_BASE_URL: provider.baseUrl, VIGIL_CONTEXT_TOKENS: '2000', ...place.env };
    server = await startServerProcess(env);
    const api = (url: string) => async (path: string, body?: unknown) => {
      const response = await fetch(`${url}${path}`, body === undefined ? {} : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      return { status: response.status, body: (await response.json()) as any };
    };
    let call = api(server.url);
    const threadId = (await call('/api/threads', {})).body.id as string;
    const said = (turn: number) => `Turn ${turn}: ${`the roses, the tomatoes and the rain of week ${turn}. `.repeat(14).trim()}`;

    // Turns until one of them starts a fold; its summary call hangs and its POST never answers.
    let turn = 0;
    while (!provider.requests.some(isSummary)) {
      turn += 1;
      let answered = false;
      void call(`/api/threads/${threadId}/messages`, { content: said(turn) }).then(
        () => (answered = true),
        () => undefined, // the killed process never answers this one
      );
      await waitFor(() => answered || provider.requests.some(isSummary), 60_000, `turn ${turn} to answer or start a fold`);
      expect(turn).toBeLessThan(30);
    }
    const interrupted = turn;
    await server.stop('SIGKILL');

    hangSummaries = false;
    server = await startServerProcess(env);
    call = api(server.url);
    // The run the kill cut short is ended by the sweep at start, once it has brought the
    // thread's history in step with what the dead run's checkpoint holds.
    await waitFor(async () => ((await call(`/api/threads/${threadId}/runs`)).body.runs as Array<{ status: string }>).every((run) => run.status !== 'running'), 60_000, 'the cut run to be ended');
    // Every message that was in the thread when the fold began is still in history, in order, once each.
    // (The interrupted turn's own message was never acknowledged — its POST never answered —
    // so it may or may not outlive the kill, depending on whether the run's input checkpoint
    // was written before the model call. That is the run path's durability, not the fold's.)
    const history = await call(`/api/threads/${threadId}/history?limit=200`);
    const personTexts = history.body.messages.filter((message: { role: string }) => message.role === 'user').map((message: { content: unknown }) => message.content);
    const answered = Array.from({ length: interrupted - 1 }, (_, index) => said(index + 1));
    expect(personTexts.slice(0, interrupted - 1)).toEqual(answered);
    expect([answered, [...answered, said(interrupted)]]).toContainEqual(personTexts);
    const kept = personTexts.length;
    // Nothing of the summary reached history.
    expect(JSON.stringify(history.body.messages)).not.toContain('SUMMARY');

    // The next turn is answered, and folds now that the summary model answers.
    const next = await call(`/api/threads/${threadId}/messages`, { content: said(interrupted + 1) });
    expect(next.status).toBe(200);
    expect(next.body.run.status).toBe('succeeded');
    const view = await call(`/api/threads/${threadId}/context`);
    expect(view.body.summary).toMatchObject({ text: 'SUMMARY: the garden notes so far.', writtenBy: 'system', coverage: { folds: 1, model: 'openai:scripted-model' } });
    expect(view.body.inputTokens).toBeLessThanOrEqual(view.body.budget.inputLimit);
    const after = await call(`/api/threads/${threadId}/history?limit=200`);
    expect(after.body.messages.filter((message: { role: string }) => message.role === 'user')).toHaveLength(kept + 1);
  }, PROCESS_TEST_TIMEOUT_MS);
}
