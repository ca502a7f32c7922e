/**
 * I16 across a real crash: the server process is killed (SIGKILL) while an autonomous
 * follow-up waits for a person's approval of a tool call. After a restart the request is
 * listed, still pending, and decidable; once approved the tool runs exactly once, the reply
 * arrives, and the follow-up is not repeated. And killed just after a decided call ran, in
 * the run that resumed it: after a restart the approval's resume job finishes that turn from
 * its checkpoint, once, without running the call again. The model is the scripted
 * OpenAI-compatible server on loopback; everything else is the real `vigil serve`.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { demoDecision, DEMO_MILESTONES } from '../../src/adapters/llm/demo-planner-answers.js';
import { PROCESS_ENDED_REASON } from '../../src/app/runs/orphaned-run-sweeper.js';
import { STOPPING_REASON } from '../../src/app/run-coordinator.js';
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
  it('I16: kill -9 just after an edited call ran, in the run that resumed it: after a restart the resume job finishes the turn from its checkpoint, once; the call does not run again, the plan completes', async () => {
    provider.reset();
    // The planner's decisions come as JSON (structured output); the demo model's answers fit
    // them: two milestones, one call each (current_time, then memory_write), critics approve.
    let hungOnce = false;
    const contextOf = (request: RecordedRequest): Json => {
      const person = [...request.messages].reverse().find((message) => message.role === 'user');
      const content: unknown = person?.content;
      const text = typeof content === 'string' ? content : Array.isArray(content) ? content.map((part: Json) => String(part.text ?? '')).join('') : '';
      try {
        return JSON.parse(text) as Json;
      } catch {
        return {};
      }
    };
    provider.respondWith((request) => {
      const decision = request.body.response_format?.json_schema?.name as string | undefined;
      if (decision === undefined) return { text: 'The week is organised.' };
      const context = contextOf(request);
      // The critique of the note milestone comes after memory_write ran and its step was
      // checkpointed: the first one never answers, and the server is killed there.
      if (decision === 'tactical_critique' && (context.milestone as Json | undefined)?.title === DEMO_MILESTONES.note.title && !hungOnce) {
        hungOnce = true;
        return { hang: true };
      }
      return { text: JSON.stringify(demoDecision(decision, context) ?? {}) };
    });
    const env = { VIGIL_DATA_DIR: dataDir, VIGIL_MODEL: 'openai:scripted-model', OPENAI_BASE_URL: provider.baseUrl, ...place.env };
    server = await startServerProcess(env);
    const agent = await call('POST', '/api/agents', {
      id: 'planner',
      name: 'Planner',
      kind: 'planner',
      systemPrompt: 'You plan.',
      tools: { approval: { current_time: { attended: 'ask' }, memory_write: { attended: 'ask' } } },
    });
    expect(agent.status, JSON.stringify(agent.body)).toBe(201);
    const threadId = (await call('POST', '/api/threads', { agentId: 'planner' })).body.id as string;
    const first = (await call('POST', `/api/threads/${threadId}/messages`, { content: 'Organise my week' })).body.run as Json;
    expect(first.status).toBe('interrupted');
    const pendingOf = async (tool: string): Promise<Json | undefined> =>
      ((await call('GET', `/api/approvals?threadId=${threadId}&status=pending`)).body.approvals as Json[]).find((approval) => approval.tool === tool);
    const clock = await pendingOf('current_time');
    expect(clock).toBeDefined();
    expect((await call('POST', `/api/approvals/${clock!.id}/decision`, { decision: 'approve' })).body).toMatchObject({ status: 'approved' });
    let note: Json | undefined;
    await waitFor(async () => Boolean((note = await pendingOf('memory_write'))), 30_000, 'the memory_write approval');
    const edited = await call('POST', `/api/approvals/${note!.id}/decision`, { decision: 'edit', arguments: { content: 'edited: the week' } });
    expect(edited.body).toMatchObject({ status: 'edited' });
    // The edited call ran and its step is checkpointed once the critic is asked: kill there.
    await waitFor(async () => hungOnce, 30_000, 'the critique after the edited call');
    expect((await call('GET', `/api/approvals/${note!.id}`)).body).toMatchObject({ status: 'edited', executed: true });
    server.child.kill('SIGKILL');
    await server.exited;
    server = await startServerProcess(env);

    const planOf = async (): Promise<Json> => {
      const plans = (await call('GET', `/api/threads/${threadId}/plans`)).body.plans as Json[];
      return (await call('GET', `/api/plans/${plans[0]!.id}`)).body;
    };
    await waitFor(async () => (await planOf()).status === 'completed', recoveryTimeoutMs, 'the plan to complete').catch(async (error: Error) => {
      const said = server!.output().split('\n').filter((line) => line.includes('resume'));
      throw new Error(`${error.message}: plan ${String((await planOf()).status)}, thread ${String((await call('GET', `/api/threads/${threadId}`)).body.status)}, runs ${JSON.stringify((await runsOf(threadId)).map((run) => [run.status, run.reason]))}\n${said.join('\n')}`);
    });
    await waitFor(async () => (await runsOf(threadId)).every((run) => run.status !== 'running'), 30_000, 'runs to end');
    const runs = (await runsOf(threadId)).filter((run) => run.correlationId === first.correlationId);
    expect(runs.map((run) => [run.status, run.reason])).toEqual([
      ['interrupted', expect.stringContaining('approval')],
      ['interrupted', expect.stringContaining('approval')],
      ['failed', PROCESS_ENDED_REASON], // killed after the edited call ran
      ['succeeded', null], // the turn finished from its checkpoint
    ]);
    const memories = (await call('GET', '/api/agents/planner/memories?limit=100')).body.memories as Json[];
    expect(memories.map((memory) => memory.content)).toEqual(['edited: the week']);
    const plan = await planOf();
    expect(plan.toolCalls.map((toolCall: Json) => [toolCall.tool, toolCall.status])).toEqual([
      ['current_time', 'succeeded'],
      ['memory_write', 'succeeded'],
    ]);
    // The executor was asked once per step: the recovery did not plan the call again.
    expect(provider.requests.filter((request) => request.body.response_format?.json_schema?.name === 'executor_step')).toHaveLength(2);
    const history = (await call('GET', `/api/threads/${threadId}/history`)).body.messages as Json[];
    expect(history.map((message) => message.role)).toEqual(['user', 'assistant']);
    expect(history[1]!.content).toContain('The week is organised.');
    expect((await call('GET', `/api/threads/${threadId}`)).body.status).toBe('idle');
    expect(server.output()).toContain('finishing the turn of a resumed run that was cut short');

    const stopped = await server.stop('SIGTERM');
    expect(stopped.code).toBe(0);
    server = undefined;
  }, 120_000 + recoveryTimeoutMs);
  it.each([
    ['killed (kill -9)', 'SIGKILL', PROCESS_ENDED_REASON, 'failed'],
    ['stopped (SIGTERM, the run cancelled at the shutdown deadline)', 'SIGTERM', STOPPING_REASON, 'cancelled'],
  ] as const)('I16: the same on a chat agent, %s while the model answers an approved call\'s result: the turn is finished after a restart, the call not run again', async (_how, signal, cutReason, cutStatus) => {
    provider.reset();
    let hungOnce = false;
    provider.respondWith((request) => {
      if (lastOf(request).role === 'tool') {
        if (!hungOnce) {
          hungOnce = true;
          return { hang: true };
        }
        return { text: `Noted: ${String(lastOf(request).content)}` };
      }
      return { toolCalls: [{ id: 'call_coffee', name: 'memory_write', arguments: { content: 'likes coffee' } }] };
    });
    // A short shutdown deadline: the hung model call is cancelled by the stop, not waited for.
    const env = { VIGIL_DATA_DIR: dataDir, VIGIL_MODEL: 'openai:scripted-model', OPENAI_BASE_URL: provider.baseUrl, VIGIL_SHUTDOWN_TIMEOUT_MS: '300', ...place.env };
    server = await startServerProcess(env);
    const agentId = `chatter-${signal.toLowerCase()}`;
    const agent = await call('POST', '/api/agents', { id: agentId, name: 'Chatter', tools: { approval: { memory_write: { attended: 'ask' } } } });
    expect(agent.status, JSON.stringify(agent.body)).toBe(201);
    const threadId = (await call('POST', '/api/threads', { agentId })).body.id as string;
    const first = (await call('POST', `/api/threads/${threadId}/messages`, { content: 'Remember that I like coffee' })).body.run as Json;
    expect(first.status).toBe('interrupted');
    const [pending] = (await call('GET', `/api/approvals?threadId=${threadId}&status=pending`)).body.approvals as Json[];
    expect((await call('POST', `/api/approvals/${pending!.id}/decision`, { decision: 'approve' })).body).toMatchObject({ status: 'approved' });
    // The call ran and its result is checkpointed once the model is asked about it: kill there.
    await waitFor(async () => hungOnce, 30_000, 'the model call after the approved call');
    if (signal === 'SIGKILL') server.child.kill('SIGKILL');
    else await server.stop('SIGTERM');
    await server.exited;
    server = await startServerProcess(env);

    let runs: Json[] = [];
    await waitFor(async () => (runs = (await runsOf(threadId)).filter((run) => run.correlationId === first.correlationId)).some((run) => run.status === 'succeeded'), recoveryTimeoutMs, 'the turn to finish').catch((error: Error) => {
      throw new Error(`${error.message}: runs ${JSON.stringify(runs.map((run) => [run.status, run.reason]))}`);
    });
    await waitFor(async () => (await runsOf(threadId)).every((run) => run.status !== 'running'), 30_000, 'runs to end');
    runs = (await runsOf(threadId)).filter((run) => run.correlationId === first.correlationId);
    expect(runs.map((run) => [run.status, run.reason])).toEqual([
      ['interrupted', expect.stringContaining('approval')],
      [cutStatus, cutReason],
      ['succeeded', null],
    ]);
    const memories = (await call('GET', `/api/agents/${agentId}/memories?limit=100`)).body.memories as Json[];
    expect(memories.map((memory) => memory.content)).toEqual(['likes coffee']);
    expect(provider.requests.filter((request) => lastOf(request).role === 'user')).toHaveLength(1); // the call was not asked for again
    const history = (await call('GET', `/api/threads/${threadId}/history`)).body.messages as Json[];
    expect(history.map((message) => [message.role, message.toolCalls?.length ?? 0])).toEqual([['user', 0], ['assistant', 1], ['assistant', 0]]);
    expect(history[2]!.content).toContain('Noted:');
    expect((await call('GET', `/api/threads/${threadId}`)).body.status).toBe('idle');

    const stopped = await server.stop('SIGTERM');
    expect(stopped.code).toBe(0);
    server = undefined;
  }, 120_000 + recoveryTimeoutMs);
}
