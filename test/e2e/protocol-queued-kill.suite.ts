/**
 * A LangGraph protocol run queued behind another on its thread (multitask_strategy
 * `enqueue`) holds its person's message in its server's memory until its turn: the message
 * is written to the thread when the run starts. When that server dies (SIGKILL) or stops
 * (SIGTERM) before then, the run can never start; after a restart it must say so — `error`,
 * RUN_NOT_STARTED, to get, list, join and join-stream — instead of staying `pending` for
 * ever (join hung). The model is the scripted OpenAI-compatible server on loopback (its
 * answer to the run in front hangs, so that run holds the thread); everything else is the
 * real `vigil serve`.
 */
import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ScriptedOpenAiServer, type RecordedRequest } from '../helpers/openai-server.js';
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { makeTempDir, removeTempDir } from '../helpers/temp-dir.js';
import { ALICE, BOB } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';
import { collect } from '../integration/langgraph-sdk.suite.js';

type Json = Record<string, any>;

const PROCESS_TEST_TIMEOUT_MS = 180_000;

export function protocolQueuedKillSuite(environment: () => Promise<{ env: Record<string, string>; cleanup: () => Promise<void> }>): void {
  let place: { env: Record<string, string>; cleanup: () => Promise<void> };
  let dataDir: string;
  let provider: ScriptedOpenAiServer;
  let server: ServerProcess | undefined;
  const lastText = (request: RecordedRequest) => JSON.stringify(request.messages.at(-1)?.content ?? '');

  beforeAll(async () => {
    dataDir = await makeTempDir('vigil-e2e-queued-');
    place = await environment();
    // `[hold]` is never answered: its run holds the thread until its process goes.
    provider = await ScriptedOpenAiServer.start({ fallback: (request) => (lastText(request).includes('[hold]') ? { hang: true } : { text: 'Answered.' }) });
  });
  afterAll(async () => {
    await server?.stop('SIGKILL');
    await provider?.close();
    await place?.cleanup();
    await removeTempDir(dataDir);
  });

  const env = () => ({
    VIGIL_DATA_DIR: dataDir,
    VIGIL_MODEL: 'openai:scripted-model',
    OPENAI_BASE_URL: provider.baseUrl,
    VIGIL_AUTH_TOKENS: `${ALICE.id}:${ALICE.token},${BOB.id}:${BOB.token}`,
    VIGIL_SHUTDOWN_TIMEOUT_MS: '0',
    ...place.env,
  });
  const clients = () => [ALICE, BOB].map((user) => new Client({ apiUrl: server!.url, apiKey: user.token, callerOptions: { maxRetries: 0 } })) as [Client, Client];
  const statusOf = async (promise: Promise<unknown>) => promise.then(() => undefined, (error: { status?: number }) => error.status);

  /** A run holding a new thread (its model call hangs) and a person's message queued behind it, pending. */
  async function queueBehindHeldRun(alice: Client, what: string) {
    const thread = await alice.threads.create();
    const held = await alice.runs.create(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content: `${what} [hold]` }] } });
    await waitFor(() => provider.requests.some((request) => lastText(request).includes(`${what} [hold]`)), 30_000, 'the first run to reach the model');
    const queued = await alice.runs.create(thread.thread_id, 'agent', { input: { messages: [{ type: 'human', content: `${what}: queued` }] }, multitaskStrategy: 'enqueue' });
    expect((await alice.runs.get(thread.thread_id, queued.run_id)).status).toBe('pending');
    return { thread, held, queued };
  }

  /** After the restart: the queued run is `error`, RUN_NOT_STARTED, everywhere; its message never reached the thread; the thread runs again. */
  async function expectNeverStarted(threadId: string, runId: string, what: string) {
    const [alice, bob] = clients();
    const ended = await alice.runs.get(threadId, runId);
    expect(ended.status).toBe('error');
    expect((ended.metadata as Json).vigil).toMatchObject({ status: 'failed', error: { code: 'RUN_NOT_STARTED', message: expect.stringContaining('never added to the thread') } });
    expect((await alice.runs.list(threadId)).find((listed) => listed.run_id === runId)?.status).toBe('error');
    // join answers (it waited for ever), and the join stream ends saying why.
    await alice.runs.join(threadId, runId);
    const streamed = await collect(alice.runs.joinStream(threadId, runId, { streamMode: ['values'] }));
    expect(streamed.at(-1)).toMatchObject({ event: 'error', data: { error: 'RUN_NOT_STARTED' } });
    // Another user learns nothing of it (I12).
    expect(await statusOf(bob.runs.get(threadId, runId))).toBe(404);
    expect(await statusOf(bob.runs.join(threadId, runId))).toBe(404);
    // The message was never added; the thread takes the next one (the run in front was ended by the orphaned-run sweep).
    await waitFor(async () => (await alice.threads.get(threadId)).status !== 'busy', 30_000, 'the cut run in front to be ended');
    const next = (await alice.runs.wait(threadId, 'agent', { input: { messages: [{ type: 'human', content: `${what}: again` }] } })) as Json;
    expect(next.messages.map((message: Json) => message.content)).toEqual([`${what} [hold]`, `${what}: again`, 'Answered.']);
  }

  it('a queued protocol run whose server is killed (SIGKILL) while it waits ends `error` RUN_NOT_STARTED after the restart, not `pending` for ever; another user 404', async () => {
    server = await startServerProcess(env());
    const { thread, queued } = await queueBehindHeldRun(clients()[0], 'killed');
    server.child.kill('SIGKILL');
    await server.exited;
    server = await startServerProcess(env());
    await expectNeverStarted(thread.thread_id, queued.run_id, 'killed');
  }, PROCESS_TEST_TIMEOUT_MS);

  it('a queued protocol run whose server is stopped (SIGTERM) while it waits ends the same way', async () => {
    const { thread, queued } = await queueBehindHeldRun(clients()[0], 'stopped');
    await server!.stop('SIGTERM');
    server = await startServerProcess(env());
    await expectNeverStarted(thread.thread_id, queued.run_id, 'stopped');
  }, PROCESS_TEST_TIMEOUT_MS);
}
