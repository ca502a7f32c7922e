/**
 * I16 across a real crash: the server process is killed (SIGKILL) while an autonomous
 * follow-up waits for a person's approval of a tool call. After a restart the request is
 * listed, still pending, and decidable; once approved the tool runs exactly once, the reply
 * arrives, and the follow-up is not repeated. The model is the scripted OpenAI-compatible
 * server on loopback; everything else is the real `vigil serve`.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ScriptedOpenAiServer, type RecordedRequest } from '../helpers/openai-server.js';
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { makeTempDir, removeTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';

type Json = Record<string, any>;

export function approvalKillSuite(environment: () => Promise<{ env: Record<string, string>; cleanup: () => Promise<void> }>, recoveryTimeoutMs: number): void {
  let place: { env: Record<string, string>; cleanup: () => Promise<void> };
  let dataDir: string;
  let provider: ScriptedOpenAiServer;
  let server: ServerProcess | undefined;
  const lastOf = (request: RecordedRequest) => request.messages.at(-1) ?? {};
  const isPerson = (request: RecordedRequest, text: string) => lastOf(request).role === 'user' && JSON.stringify(lastOf(request).content).includes(text);

  beforeAll(async () => {
    dataDir = await makeTempDir('vigil-e2e-approval-');
    place = await environment();
    provider = await ScriptedOpenAiServer.start({
      fallback: (request) => {
        if (lastOf(request).role === 'tool') return { text: `Noted: ${String(lastOf(request).content)}` };
        if (isPerson(request, 'Hello')) return { text: 'Do you like tea?' };
        // The follow-up: the agent acts while nobody watches (memory_write asks then, by default).
        return { toolCalls: [{ id: 'call_tea', name: 'memory_write', arguments: { content: 'likes tea' } }] };
      },
    });
  });
  afterAll(async () => {
    await server?.stop('SIGKILL');
    await provider?.close();
    await place?.cleanup();
    await removeTempDir(dataDir);
  });

  async function call(method: string, path: string, body?: unknown): Promise<Json> {
    const response = await fetch(`${server!.url}${path}`, { method, ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }) });
    return { status: response.status, body: (await response.json()) as Json };
  }
  const runsOf = async (threadId: string) => ((await call('GET', `/api/threads/${threadId}/runs?limit=100`)).body.runs as Json[]).reverse();

  it('I16: kill -9 while an autonomous follow-up waits for approval: after a restart it is listed, approved, runs once, replies; the follow-up is not repeated', async () => {
    const env = { VIGIL_DATA_DIR: dataDir, VIGIL_MODEL: 'openai:scripted-model', OPENAI_BASE_URL: provider.baseUrl, ...place.env };
    server = await startServerProcess(env);
    const agent = await call('POST', '/api/agents', {
      id: 'actor',
      name: 'Actor',
      autonomy: { enabled: true, delaysMs: { check_in: 200, question_unanswered: 200, task_incomplete: 200, waiting_for_decision: 200 }, minDelayMs: 10, maxPerSilence: 1 },
    });
    expect(agent.status, JSON.stringify(agent.body)).toBe(201);
    const threadId = (await call('POST', '/api/threads', { agentId: 'actor' })).body.id as string;
    expect((await call('POST', `/api/threads/${threadId}/messages`, { content: 'Hello' })).body.run.status).toBe('succeeded');
    let waiting: Json | undefined;
    await waitFor(async () => Boolean((waiting = (await runsOf(threadId)).find((run) => run.trigger === 'autonomy' && run.status !== 'running'))), 30_000, 'the follow-up to wait');
    expect(waiting).toMatchObject({ status: 'interrupted' });

    server.child.kill('SIGKILL');
    await server.exited;
    server = await startServerProcess(env);

    const listed = (await call('GET', '/api/approvals?status=pending')).body.approvals as Json[];
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ threadId, runId: waiting!.id, tool: 'memory_write', arguments: { content: 'likes tea' }, attended: false });
    expect((await call('GET', `/api/threads/${threadId}`)).body.status).toBe('interrupted');
    const decided = await call('POST', `/api/approvals/${listed[0]!.id}/decision`, { decision: 'approve' });
    expect(decided.body).toMatchObject({ status: 'approved', channel: 'api' });

    let resumed: Json | undefined;
    await waitFor(
      async () => Boolean((resumed = (await runsOf(threadId)).find((run) => run.id !== waiting!.id && run.correlationId === waiting!.correlationId && run.status !== 'running'))),
      recoveryTimeoutMs,
      'the resumed run',
    );
    expect(resumed).toMatchObject({ status: 'succeeded', trigger: 'autonomy' });
    const memories = (await call('GET', '/api/agents/actor/memories?limit=100')).body.memories as Json[];
    expect(memories.map((memory) => memory.content)).toEqual(['likes tea']);
    expect((await call('GET', `/api/approvals/${listed[0]!.id}`)).body).toMatchObject({ status: 'approved', executed: true });
    const history = (await call('GET', `/api/threads/${threadId}/history`)).body.messages as Json[];
    expect(history.at(-1)).toMatchObject({ role: 'assistant' });
    expect(history.at(-1)!.content).toContain('Noted:');
    const timers = (await call('GET', `/api/threads/${threadId}/timers?state=all&limit=100`)).body.timers as Json[];
    expect(timers.filter((timer) => timer.state === 'fired')).toHaveLength(1);
    await waitFor(async () => (await runsOf(threadId)).every((run) => run.status !== 'running'), 30_000, 'runs to end');
    expect((await runsOf(threadId)).filter((run) => run.trigger === 'autonomy').map((run) => run.status)).toEqual(['interrupted', 'succeeded']);
    expect(provider.requests.filter((request) => lastOf(request).role === 'tool')).toHaveLength(1);
    expect((await call('GET', `/api/threads/${threadId}`)).body.status).toBe('idle');

    const stopped = await server.stop('SIGTERM');
    expect(stopped.code).toBe(0);
    server = undefined;
  }, 120_000 + recoveryTimeoutMs);
}
