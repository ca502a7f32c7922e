import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FakeModelLog, tagged } from '../helpers/autonomy-fake-model.js';
import { fast } from './autonomy.suite.js';
import { topLevelKeys } from '../helpers/log-capture.js';
import { startTestServer, type Backend, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';

type Json = Record<string, any>;

/**
 * Log lines name the right unit of work: each request, run and job has its own log
 * context (nothing inherited from whatever work happened to schedule it), and no key is
 * written twice in a line.
 */
export function logContextSuite(backend: () => Backend): void {
  const models = new FakeModelLog();
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer(backend(), { models: models.resolver() });
  });
  afterAll(async () => {
    await server?.destroy();
  });

  async function threadWithAutonomy(tag: string): Promise<{ agentId: string; threadId: string }> {
    const agentId = `log-${tag}-${randomUUID().slice(0, 6)}`;
    expect((await server.request('POST', '/api/agents', { body: { id: agentId, name: tag, systemPrompt: tagged(tag), autonomy: fast({ delay: 100, busyRetryMs: 50 }) } })).status).toBe(201);
    const thread = await server.request('POST', '/api/threads', { body: { agentId } });
    expect(thread.status).toBe(201);
    return { agentId, threadId: thread.body.id as string };
  }

  async function runsOf(threadId: string): Promise<Json[]> {
    return (await server.request('GET', `/api/threads/${threadId}/runs?limit=100`)).body.runs as Json[];
  }

  it('log context (issue 9, item 2): runs and follow-up jobs on two threads, interleaved — every line names its own thread, run and request, and no key appears twice', async () => {
    const first = await threadWithAutonomy('first');
    const second = await threadWithAutonomy('second');
    const threads = [first, second];
    // Interleaved: two people's messages at once, each answered by a run and followed up by a job (a timer).
    const replies = await Promise.all(threads.map(({ threadId }, index) => server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: `hello from ${index}?` } })));
    for (const reply of replies) expect(reply.status, reply.text).toBe(200);
    let runs: Json[] = [];
    await waitFor(
      async () => {
        const all = await Promise.all(threads.map(({ threadId }) => runsOf(threadId)));
        runs = all.flat();
        return all.every((list) => list.length >= 2 && list.every((run) => run.status !== 'running'));
      },
      15_000,
      'both threads to have a run and a follow-up',
    );
    expect(runs.filter((run) => run.trigger === 'autonomy')).toHaveLength(2);
    // A request answered for another thread id meanwhile: its own context too.
    expect((await server.request('GET', `/api/threads/${first.threadId}/history`)).status).toBe(200);

    const threadOfRun = new Map(runs.map((run) => [run.id as string, run.threadId as string]));
    const agentOfThread = new Map(threads.map(({ threadId, agentId }) => [threadId, agentId]));
    const autonomousRuns = new Set(runs.filter((run) => run.trigger === 'autonomy').map((run) => run.id as string));

    // Which thread each request was about, from the request's own URL.
    const threadOfRequest = new Map<string, string | null>();
    for (const line of server.logs) {
      const url = (line.req as { url?: string } | undefined)?.url;
      if (typeof line.requestId === 'string' && url) threadOfRequest.set(line.requestId, /\/api\/threads\/([^/?]+)/.exec(url)?.[1] ?? null);
    }

    const duplicated: string[] = [];
    for (const raw of server.rawLogs) {
      const keys = topLevelKeys(raw);
      const seen = new Set<string>();
      for (const key of keys) {
        if (seen.has(key)) duplicated.push(`${key} in ${raw.slice(0, 300)}`);
        seen.add(key);
      }
    }
    expect(duplicated).toEqual([]);

    const misattributed: string[] = [];
    let checked = 0;
    for (const line of server.logs) {
      const { threadId, runId, requestId, agentId } = line as Json;
      const about = `${line.msg} ${JSON.stringify(line).slice(0, 300)}`;
      if (typeof runId === 'string' && threadOfRun.has(runId)) {
        checked++;
        if (threadId !== undefined && threadOfRun.get(runId) !== threadId) misattributed.push(`run of another thread: ${about}`);
        // A follow-up is started by a job, not by any request.
        if (autonomousRuns.has(runId) && requestId !== undefined) misattributed.push(`a job's run carries a request id: ${about}`);
      }
      if (typeof threadId === 'string' && agentOfThread.has(threadId) && typeof agentId === 'string' && agentOfThread.get(threadId) !== agentId) {
        misattributed.push(`agent of another thread: ${about}`);
      }
      if (typeof requestId === 'string' && typeof threadId === 'string' && threadOfRequest.has(requestId)) {
        const requested = threadOfRequest.get(requestId);
        if (requested !== null && requested !== threadId) misattributed.push(`request for another thread: ${about}`);
      }
    }
    expect(checked).toBeGreaterThan(4);
    expect(misattributed).toEqual([]);
  });
}
