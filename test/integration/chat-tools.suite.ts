/**
 * Tools in chat agents and approvals (issue 16) end to end: a real server on a real
 * database (SQLite and PostgreSQL, by the *.test.ts files beside this one), a real
 * ChatOpenAI talking to the scripted OpenAI-compatible server on loopback, which records
 * what the model received. Tests share one model server and run one after another.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HumanMessage, ToolMessage } from '@langchain/core/messages';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { SqlApprovalRepository } from '../../src/adapters/sql/approval-repository.js';
import type { SqlStorage } from '../../src/adapters/sql/sql-storage.js';
import { SqlTimerRepository } from '../../src/adapters/sql/timer-repository.js';
import { localDay } from '../../src/domain/autonomy/zoned-time.js';
import { PREEMPTED_REASON } from '../../src/app/run-coordinator.js';
import { APPROVAL_RESUME_QUEUE } from '../../src/app/approvals/approval-service.js';
import { TRIGGER_PROMPTS } from '../../src/domain/message-metadata.js';
import type { RecordedRequest, ScriptedOpenAiServer, ScriptedResponse } from '../helpers/openai-server.js';
import { startScriptedModelServer, stopScriptedModelServer } from '../helpers/scripted-model-server.js';
import { ALICE, BOB, type Backend, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';

type Json = Record<string, any>;

/** The last message the model received, and the tool results it was given. */
const lastOf = (request: RecordedRequest) => request.messages.at(-1) ?? {};
const toolResults = (request: RecordedRequest) => request.messages.filter((message) => message.role === 'tool');
const isPerson = (request: RecordedRequest, text: string) => lastOf(request).role === 'user' && JSON.stringify(lastOf(request).content).includes(text);

export function chatToolsSuite(backend: () => Backend, options: { slowMs: number }): void {
  let model: ScriptedOpenAiServer;
  let server: TestServer;
  const waitLong = 20_000 + options.slowMs * 10;

  beforeAll(async () => {
    ({ model, server } = await startScriptedModelServer(backend()));
  });
  afterAll(() => stopScriptedModelServer({ model, server }));

  async function agentWith(body: Json = {}): Promise<string> {
    const id = `t-${randomUUID().slice(0, 8)}`;
    const response = await server.request('POST', '/api/agents', { body: { id, name: 'tools', ...body } });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    return id;
  }
  async function threadOf(agentId: string): Promise<string> {
    return (await server.request('POST', '/api/threads', { body: { agentId } })).body.id as string;
  }
  async function say(threadId: string, content: string): Promise<Json> {
    const response = await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content } });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return response.body;
  }
  async function runs(threadId: string): Promise<Json[]> {
    return ((await server.request('GET', `/api/threads/${threadId}/runs?limit=100`)).body.runs as Json[]).reverse();
  }
  async function approvalsOf(threadId: string, token = ALICE.token): Promise<Json[]> {
    const response = await server.request('GET', `/api/approvals?threadId=${threadId}`, { token });
    expect(response.status).toBe(200);
    return response.body.approvals as Json[];
  }
  async function memories(agentId: string): Promise<string[]> {
    return ((await server.request('GET', `/api/agents/${agentId}/memories?limit=100`)).body.memories as Json[]).map((memory) => memory.content as string);
  }
  function decide(id: string, body: Json, token = ALICE.token) {
    return server.request('POST', `/api/approvals/${id}/decision`, { body, token });
  }
  /** Answers a model call from what it received: the responder sees every request. */
  function respond(responder: (request: RecordedRequest) => ScriptedResponse): void {
    model.reset();
    model.respondWith(responder);
  }
  const askMemoryWrite = { tools: { approval: { memory_write: { attended: 'ask' } } } };

  it('a chat agent calls a tool and answers from its result; history shows the call as the agent\'s turn', async () => {
    respond((request) =>
      toolResults(request).length === 0
        ? { toolCalls: [{ id: 'call_time', name: 'current_time', arguments: { timeZone: 'UTC' } }] }
        : { text: `The time is ${JSON.parse(toolResults(request)[0]!.content).iso}` },
    );
    const threadId = await threadOf(await agentWith());
    const body = await say(threadId, 'What time is it?');
    expect(body.run.status).toBe('succeeded');
    const offered = (model.requests[0]!.body.tools as Json[]).map((tool) => tool.function.name).sort();
    expect(offered).toEqual(['cancel_check_in', 'current_time', 'list_check_ins', 'memory_search', 'memory_write', 'schedule_check_in']);
    const [result] = toolResults(model.requests[1]!);
    expect(result).toMatchObject({ tool_call_id: 'call_time' });
    const reply = body.messages.at(-1);
    expect(reply.role).toBe('assistant');
    expect(reply.content).toBe(`The time is ${JSON.parse(result!.content).iso}`);
    const history = (await server.request('GET', `/api/threads/${threadId}/history?include=internal`)).body.messages as Json[];
    expect(history.map((message) => message.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    const tool = history[2]!;
    expect(tool.additionalKwargs).toMatchObject({ tool_name: 'current_time', tool_arguments: { timeZone: 'UTC' }, tool_status: 'succeeded' });
    expect(history.filter((message) => message.role === 'user')).toHaveLength(1);
    // The person's view: the reply's tool calls belong to the agent's turn.
    const visible = (await server.request('GET', `/api/threads/${threadId}/history`)).body.messages as Json[];
    expect(visible.map((message) => message.role)).toEqual(['user', 'assistant', 'assistant']);
    expect(visible[1]!.toolCalls).toEqual([{ id: 'call_time', name: 'current_time', arguments: { timeZone: 'UTC' } }]);
  });

  it('tool arguments and results are redacted before they are stored or shown; the tool itself gets the real ones', async () => {
    const secret = 'sk-live0123456789abcdefghijklmnopqrstuvwxyz';
    respond((request) => (toolResults(request).length === 0 ? { toolCalls: [{ id: 'call_secret', name: 'memory_write', arguments: { content: `my key is ${secret}` } }] } : { text: 'Saved.' }));
    const agentId = await agentWith();
    const threadId = await threadOf(agentId);
    await say(threadId, 'Remember my key');
    const history = JSON.stringify((await server.request('GET', `/api/threads/${threadId}/history?include=internal`)).body);
    expect(history).not.toContain(secret);
    expect(history).toContain('[redacted]');
    expect(await memories(agentId)).toEqual([`my key is ${secret}`]);
  });

  it('one tool-settings shape on every agent kind: a planner agent takes tools.fetch; planner settings keep working', async () => {
    const planner = await agentWith({ kind: 'planner', tools: { fetch: { allowedHosts: ['example.com'] } } });
    const offered = (await server.request('GET', `/api/agents/${planner}/tools`)).body.tools.map((tool: Json) => tool.name);
    expect(offered).toContain('http_fetch');
    const legacy = await agentWith({ kind: 'planner' });
    expect((await server.request('PUT', `/api/agents/${legacy}/planner`, { body: { fetch: { allowedHosts: ['example.org'] } } })).status).toBe(200);
    expect((await server.request('GET', `/api/agents/${legacy}/tools`)).body.tools.map((tool: Json) => tool.name)).toContain('http_fetch');
    const plain = await agentWith({ kind: 'planner' });
    expect((await server.request('GET', `/api/agents/${plain}/tools`)).body.tools.map((tool: Json) => tool.name)).not.toContain('http_fetch');
  });

  it('a tool that throws becomes an error tool message the model reads; the run succeeds', async () => {
    respond((request) =>
      toolResults(request).length === 0 ? { toolCalls: [{ id: 'call_bad', name: 'current_time', arguments: { timeZone: 'Nowhere/Atlantis' } }] } : { text: 'That zone does not exist.' },
    );
    const threadId = await threadOf(await agentWith());
    const body = await say(threadId, 'Time in Atlantis?');
    expect(body.run.status).toBe('succeeded');
    const [result] = toolResults(model.requests[1]!);
    expect(result!.content).toContain('unknown time zone');
    expect(body.messages.at(-1).content).toBe('That zone does not exist.');
  });

  it('parallel tool calls of one step all run, and each result reaches the model', async () => {
    respond((request) =>
      toolResults(request).length === 0
        ? { toolCalls: [{ id: 'call_a', name: 'memory_write', arguments: { content: 'likes sailing' } }, { id: 'call_b', name: 'current_time', arguments: {} }] }
        : { text: 'Noted.' },
    );
    const agentId = await agentWith();
    const body = await say(await threadOf(agentId), 'Remember I like sailing');
    expect(body.run.status).toBe('succeeded');
    expect(toolResults(model.requests[1]!).map((message) => message.tool_call_id).sort()).toEqual(['call_a', 'call_b']);
    expect(await memories(agentId)).toEqual(['likes sailing']);
    // The agent wrote it, in this run and thread; a memory the person saves is theirs.
    const saved = await server.request('POST', `/api/agents/${agentId}/memories`, { body: { content: 'sails on Sundays' } });
    expect(saved.body.origin).toEqual({ by: 'api', runId: null, threadId: null });
    const listed = (await server.request('GET', `/api/agents/${agentId}/memories?limit=100`)).body.memories as Json[];
    expect(listed.map((memory) => [memory.content, memory.origin])).toEqual([
      ['sails on Sundays', { by: 'api', runId: null, threadId: null }],
      ['likes sailing', { by: 'agent', runId: body.run.id, threadId: body.run.threadId }],
    ]);
    // I12: another user sees none of them.
    expect((await server.request('GET', `/api/agents/${agentId}/memories?limit=100`, { token: BOB.token })).status).toBe(404);
  });

  it('I9: identical repeated calls are refused and the turn ends at its tool step bound, with a stated reason', async () => {
    respond(() => ({ toolCalls: [{ name: 'current_time', arguments: { timeZone: 'UTC' } }] }));
    const threadId = await threadOf(await agentWith({ tools: { maxSteps: 3, maxIdenticalCalls: 1 } }));
    const body = await say(threadId, 'loop forever');
    expect(body.run.status).toBe('succeeded');
    expect(body.run.reason).toBe('the turn reached its tool step limit');
    expect(model.requests).toHaveLength(4); // 3 tool steps, then one call offered no tools
    expect(model.requests[3]!.body.tools).toBeUndefined();
    expect(toolResults(model.requests[2]!).at(-1)!.content).toContain('already made 1 times');
  });

  /** Every tool call the model made has its result, and every result answers a call (what providers require). */
  function expectWellFormed(request: RecordedRequest): void {
    const calls = request.messages.flatMap((message) => (message.role === 'assistant' ? ((message.tool_calls ?? []) as Json[]).map((call) => call.id as string) : []));
    const answered = toolResults(request).map((message) => message.tool_call_id as string);
    expect(answered.sort()).toEqual(calls.sort());
  }

  it('I9: a tool call whose arguments are not valid JSON is answered with an error result (the model told why), counted as a step, and closed', async () => {
    respond((request) => (lastOf(request).role === 'tool' ? { text: 'Sorry, let me fix that.' } : { toolCalls: [{ id: 'call_broken', name: 'current_time', arguments: 'timeZone=UTC' }] }));
    const threadId = await threadOf(await agentWith());
    const body = await say(threadId, 'What time is it, broken?');
    expect(body.run.status).toBe('succeeded');
    expect(model.requests).toHaveLength(2);
    expectWellFormed(model.requests[1]!);
    const [result] = toolResults(model.requests[1]!);
    expect(result).toMatchObject({ tool_call_id: 'call_broken' });
    expect(result!.content).toContain('not valid JSON');
    expect(body.messages.at(-1).content).toBe('Sorry, let me fix that.');
    // A model that only ever sends broken calls ends at the turn's step bound (I9), and the next turn's input is well-formed.
    respond((request) => (isPerson(request, 'And now?') ? { text: 'Fine.' } : { toolCalls: [{ id: `call_${randomUUID().slice(0, 6)}`, name: 'current_time', arguments: 'oops: {' }] }));
    const looping = await threadOf(await agentWith({ tools: { maxSteps: 2 } }));
    const bounded = await say(looping, 'Loop on broken calls');
    expect(bounded.run).toMatchObject({ status: 'succeeded', reason: 'the turn reached its tool step limit' });
    expect(model.requests).toHaveLength(3); // 2 tool steps, then one call offered no tools
    expect(model.requests[2]!.body.tools).toBeUndefined();
    await say(looping, 'And now?');
    expect(model.requests).toHaveLength(4);
    for (const request of model.requests) expectWellFormed(request);
  });

  // ---------- approvals (I16) ----------
  /** The run that resumed a waiting one carries its correlation id. */
  const resumes = (candidate: Json, waiting: Json) => candidate.id !== waiting.id && candidate.correlationId === waiting.correlationId;
  async function runWhere(threadId: string, predicate: (run: Json) => boolean): Promise<Json> {
    let found: Json | undefined;
    await waitFor(async () => Boolean((found = (await runs(threadId)).find(predicate))), waitLong, 'a run');
    return found!;
  }
  /** The model: a person's message gets a memory_write call (or `calls`), a tool result gets a sentence quoting it. */
  function writeOnRequest(calls: Array<{ id: string; content: string }> = [{ id: 'call_write', content: 'likes tea' }]) {
    respond((request) => {
      const results = toolResults(request);
      if (lastOf(request).role === 'tool') return { text: `Results: ${results.map((result) => result.content).join(' | ')}` };
      return { toolCalls: calls.map((call) => ({ id: call.id, name: 'memory_write', arguments: { content: call.content } })) };
    });
  }
  async function waitingApproval(agentBody: Json = askMemoryWrite, calls?: Array<{ id: string; content: string }>): Promise<{ agentId: string; threadId: string; approvals: Json[]; run: Json; lastRequest: () => RecordedRequest }> {
    writeOnRequest(calls);
    const agentId = await agentWith(agentBody);
    const threadId = await threadOf(agentId);
    // A tag of this thread in its first message: every later model call of the thread carries
    // it, so a late resume of another test's thread is never mistaken for this one's.
    const tag = `[thread ${randomUUID().slice(0, 8)}]`;
    const body = await say(threadId, `Please remember this ${tag}`);
    const lastRequest = () => {
      const found = [...model.requests].reverse().find((request) => JSON.stringify(request.messages).includes(tag));
      if (!found) throw new Error(`no model call of thread ${tag}`);
      return found;
    };
    return { agentId, threadId, approvals: await approvalsOf(threadId), run: body.run, lastRequest };
  }

  it('I16: ask on an autonomous follow-up: interrupted, survives a restart, approved, runs once, answers, the follow-up is not repeated', async () => {
    respond((request) => {
      if (isPerson(request, 'Hello')) return { text: 'Do you like tea?' };
      if (lastOf(request).role === 'tool') return { text: `Noted: ${toolResults(request).at(-1)!.content}` };
      return { toolCalls: [{ id: 'call_tea', name: 'memory_write', arguments: { content: 'likes tea' } }] };
    });
    const policy = { enabled: true, delaysMs: { check_in: 150, question_unanswered: 150, task_incomplete: 150, waiting_for_decision: 150 }, minDelayMs: 10, maxPerSilence: 1, busyRetryMs: 100 };
    const agentId = await agentWith({ autonomy: policy });
    const threadId = await threadOf(agentId);
    await say(threadId, 'Hello');
    const waiting = await runWhere(threadId, (run) => run.trigger === 'autonomy' && run.status !== 'running');
    expect(waiting.status).toBe('interrupted');
    expect(waiting.reason).toContain('approval');
    const [pending] = await approvalsOf(threadId);
    expect(pending).toMatchObject({ status: 'pending', tool: 'memory_write', arguments: { content: 'likes tea' }, attended: false, runId: waiting.id, toolCallId: 'call_tea' });
    expect(await memories(agentId)).toEqual([]);

    server = await server.restart();
    const listed = (await server.request('GET', '/api/approvals')).body.approvals as Json[];
    expect(listed.find((approval) => approval.id === pending!.id)).toMatchObject({ status: 'pending' });
    const decided = await decide(pending!.id, { decision: 'approve' });
    expect(decided.status).toBe(200);
    expect(decided.body).toMatchObject({ status: 'approved', decidedBy: ALICE.id, channel: 'api' });

    const resumed = await runWhere(threadId, (run) => resumes(run, waiting) && run.status !== 'running');
    expect(resumed).toMatchObject({ status: 'succeeded', trigger: 'autonomy' });
    expect(await memories(agentId)).toEqual(['likes tea']);
    expect((await server.request('GET', `/api/approvals/${pending!.id}`)).body).toMatchObject({ status: 'approved', executed: true });
    const history = (await server.request('GET', `/api/threads/${threadId}/history`)).body.messages as Json[];
    expect(history.at(-1)).toMatchObject({ role: 'assistant' });
    expect(history.at(-1)!.content).toContain('"saved":true');
    // One follow-up fired, ever; its two runs are the one that waited and the one that resumed it.
    const timers = (await server.request('GET', `/api/threads/${threadId}/timers?state=all&limit=100`)).body.timers as Json[];
    expect(timers.filter((timer) => timer.state === 'fired')).toHaveLength(1);
    await waitFor(async () => (await runs(threadId)).every((run) => run.status !== 'running'), waitLong, 'runs to end');
    expect((await runs(threadId)).filter((run) => run.trigger === 'autonomy').map((run) => run.status)).toEqual(['interrupted', 'succeeded']);
    expect(model.requests.filter((request) => lastOf(request).role === 'tool')).toHaveLength(1);
  });

  it('I16, I11: an asking call whose arguments do not fit its tool is answered with the validation error; nobody is asked', async () => {
    respond((request) => (lastOf(request).role === 'tool' ? { text: 'Let me try that again.' } : { toolCalls: [{ id: 'call_unfit', name: 'memory_write', arguments: { content: '   ' } }] }));
    const agentId = await agentWith(askMemoryWrite);
    const threadId = await threadOf(agentId);
    const body = await say(threadId, 'Remember nothing');
    expect(body.run.status).toBe('succeeded');
    expect(await approvalsOf(threadId)).toEqual([]);
    const [result] = toolResults(model.requests.at(-1)!);
    expect(result).toMatchObject({ tool_call_id: 'call_unfit' });
    expect(result!.content).toContain('do not fit');
    expect(result!.content).toContain('content');
    expect(body.messages.at(-1).content).toBe('Let me try that again.');
    expect(await memories(agentId)).toEqual([]);
  });

  it('I16: a rejected call never runs; the model reads the person\'s message', async () => {
    const { agentId, threadId, approvals, run, lastRequest } = await waitingApproval();
    expect(run.status).toBe('interrupted');
    expect((await decide(approvals[0]!.id, { decision: 'reject', message: 'not that one' })).body).toMatchObject({ status: 'rejected', message: 'not that one' });
    await runWhere(threadId, (candidate) => resumes(candidate, run) && candidate.status === 'succeeded');
    const result = toolResults(lastRequest()).at(-1)!;
    expect(result.content).toContain('rejected');
    expect(result.content).toContain('not that one');
    expect(await memories(agentId)).toEqual([]);
  });

  it('I16: an edit runs with exactly the edited arguments; invalid ones are refused with 400', async () => {
    const { agentId, threadId, approvals, run, lastRequest } = await waitingApproval();
    const id = approvals[0]!.id as string;
    const invalid = await decide(id, { decision: 'edit', arguments: { content: '   ' } });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error.code).toBe('APPROVAL_ARGUMENTS_INVALID');
    const missing = await decide(id, { decision: 'edit' });
    expect(missing.status).toBe(400);
    expect(missing.body.error.code).toBe('VALIDATION_FAILED');
    expect((await approvalsOf(threadId))[0]!.status).toBe('pending');
    const edited = await decide(id, { decision: 'edit', arguments: { content: 'likes green tea' } });
    expect(edited.body).toMatchObject({ status: 'edited', editedArguments: { content: 'likes green tea' } });
    await runWhere(threadId, (candidate) => resumes(candidate, run) && candidate.status === 'succeeded');
    expect(await memories(agentId)).toEqual(['likes green tea']);
  });

  it('I16: an unanswered request expires: recorded as expired (not a refusal), the model told not to retry', async () => {
    const { agentId, threadId, approvals, run, lastRequest } = await waitingApproval({ tools: { approval: { memory_write: { attended: 'ask', timeoutMs: 1_000 } } } });
    await runWhere(threadId, (candidate) => resumes(candidate, run) && candidate.status === 'succeeded');
    expect((await server.request('GET', `/api/approvals/${approvals[0]!.id}`)).body).toMatchObject({ status: 'expired', decidedBy: 'system', channel: 'system', executed: false });
    const result = toolResults(lastRequest()).at(-1)!;
    expect(result.content).toContain('Nobody answered');
    expect(result.content).toContain('not a refusal');
    expect(result.content).toContain('Do not retry');
    expect(await memories(agentId)).toEqual([]);
  });

  it('I16, I11: the first decision wins: the same one again is accepted, a different one is 409', async () => {
    const { threadId, approvals, run } = await waitingApproval();
    const id = approvals[0]!.id as string;
    expect((await decide(id, { decision: 'approve' })).status).toBe(200);
    expect((await decide(id, { decision: 'approve' })).status).toBe(200);
    const second = await decide(id, { decision: 'reject' });
    expect(second.status).toBe(409);
    expect(second.body.error.code).toBe('APPROVAL_ALREADY_DECIDED');
    await runWhere(threadId, (candidate) => resumes(candidate, run) && candidate.status === 'succeeded');
    expect((await server.request('GET', `/api/approvals/${id}`)).body.status).toBe('approved');
  });

  it('I16, I11: a decision after the deadline, before the expiry job ran, is refused with 409: the request is recorded as expired and the run goes on', async () => {
    const { agentId, threadId, approvals, run, lastRequest } = await waitingApproval();
    const id = approvals[0]!.id as string;
    // The deadline passes while its job has not run yet (it is due a day from now).
    const { db } = (server.storage as SqlStorage).context;
    await (db as any).updateTable('tool_approvals').set({ expires_at: new Date(Date.now() - 1_000).toISOString() }).where('id', '=', id).execute();
    const late = await decide(id, { decision: 'approve' });
    expect(late.status, JSON.stringify(late.body)).toBe(409);
    expect(late.body.error.code).toBe('APPROVAL_ALREADY_DECIDED');
    expect((await server.request('GET', `/api/approvals/${id}`)).body).toMatchObject({ status: 'expired', decidedBy: 'system', channel: 'system', executed: false });
    await runWhere(threadId, (candidate) => resumes(candidate, run) && candidate.status === 'succeeded');
    expect(toolResults(lastRequest()).at(-1)!.content).toContain('Nobody answered');
    expect(await memories(agentId)).toEqual([]);
  });

  it('I16, I11: a decision is recorded with the resume it settles or not at all: when writing the resume fails the request stays pending (500), and deciding again runs the call once; another user 404', async () => {
    const { agentId, threadId, approvals, run } = await waitingApproval();
    const id = approvals[0]!.id as string;
    // The write that follows the decision fails (the database drops the connection, or the
    // process dies there): without its resume, a recorded approval would never run.
    const jobs = server.services.jobs;
    const schedule = jobs.schedule;
    let failures = 0;
    jobs.schedule = async (job, options) => {
      if (job.queue === APPROVAL_RESUME_QUEUE && failures === 0) {
        failures += 1;
        throw new Error('the job table did not answer');
      }
      return schedule.call(jobs, job, options);
    };
    try {
      const failed = await decide(id, { decision: 'approve' });
      expect(failed.status, JSON.stringify(failed.body)).toBe(500);
      expect(failed.body.error.code).toBe('INTERNAL');
    } finally {
      jobs.schedule = schedule;
    }
    expect(failures).toBe(1);
    expect((await server.request('GET', `/api/approvals/${id}`)).body).toMatchObject({ status: 'pending', decidedBy: null, executed: false });
    expect((await server.request('GET', `/api/threads/${threadId}`)).body.status).toBe('interrupted');
    // Another user can neither decide it nor see it (I12); the owner's decision, sent again, is the one recorded.
    expect((await decide(id, { decision: 'approve' }, BOB.token)).status).toBe(404);
    expect((await server.request('GET', `/api/approvals/${id}`, { token: BOB.token })).status).toBe(404);
    expect((await decide(id, { decision: 'approve' })).body).toMatchObject({ status: 'approved', decidedBy: ALICE.id });
    await runWhere(threadId, (candidate) => resumes(candidate, run) && candidate.status === 'succeeded');
    expect(await memories(agentId)).toEqual(['likes tea']);
    expect((await server.request('GET', `/api/approvals/${id}`)).body).toMatchObject({ status: 'approved', executed: true });
  });

  it('I12, I11: another user can neither see nor decide a request (404); bad input gets a stable code', async () => {
    const { threadId, approvals } = await waitingApproval();
    const id = approvals[0]!.id as string;
    const seen = await server.request('GET', `/api/approvals/${id}`, { token: BOB.token });
    expect(seen.status).toBe(404);
    expect(seen.body.error.code).toBe('APPROVAL_NOT_FOUND');
    const decided = await decide(id, { decision: 'approve' }, BOB.token);
    expect(decided.status).toBe(404);
    expect(decided.body.error.code).toBe('APPROVAL_NOT_FOUND');
    expect(((await server.request('GET', '/api/approvals', { token: BOB.token })).body.approvals as Json[]).map((approval) => approval.id)).not.toContain(id);
    // Filtered by her thread, as by a thread nobody has: nothing (and the owner's filter finds it).
    for (const thread of [threadId, randomUUID()]) expect((await server.request('GET', `/api/approvals?threadId=${thread}&status=pending`, { token: BOB.token })).body).toEqual({ approvals: [] });
    expect(((await server.request('GET', `/api/approvals?threadId=${threadId}&status=pending`)).body.approvals as Json[]).map((approval) => approval.id)).toContain(id);
    expect((await decide(id, { decision: 'maybe' })).body.error.code).toBe('VALIDATION_FAILED');
    expect((await decide(randomUUID(), { decision: 'approve' })).body.error.code).toBe('APPROVAL_NOT_FOUND');
    expect((await approvalsOf(threadId))[0]!.status).toBe('pending');
    await decide(id, { decision: 'reject' });
  });

  it("I16: a person's new message supersedes the waiting calls (recorded, the model told) and is answered", async () => {
    const { agentId, threadId, approvals, lastRequest } = await waitingApproval();
    respond((request) => ({ text: `Answering: ${toolResults(request).map((result) => result.content).join(' | ')}` }));
    const body = await say(threadId, 'Actually, never mind');
    expect(body.run.status).toBe('succeeded');
    expect((await server.request('GET', `/api/approvals/${approvals[0]!.id}`)).body).toMatchObject({ status: 'superseded', channel: 'system' });
    const request = lastRequest();
    expect(lastOf(request).content).toBe('Actually, never mind');
    expect(JSON.stringify(toolResults(request))).toContain('sent a new message before deciding');
    expect(await memories(agentId)).toEqual([]);
  });

  it("I16: a person's message after a decision, before the resume ran: the approved call runs once and the rejection is told before the message is answered; only the undecided call is superseded", async () => {
    const calls = [{ id: 'call_yes', content: 'likes figs' }, { id: 'call_no', content: 'likes plums' }, { id: 'call_open', content: 'likes kiwis' }];
    const { agentId, threadId, approvals, lastRequest } = await waitingApproval(askMemoryWrite, calls);
    const byCall = Object.fromEntries(approvals.map((approval) => [approval.toolCallId, approval.id as string]));
    // Decided, the resume not yet run: recorded as a person's decisions are, without the resume job the service schedules after.
    const records = new SqlApprovalRepository((server.storage as SqlStorage).context);
    const decidedAt = new Date().toISOString();
    expect(await records.decide(byCall.call_yes!, { status: 'approved', decidedBy: ALICE.id, channel: 'api', decidedAt })).toBeDefined();
    expect(await records.decide(byCall.call_no!, { status: 'rejected', decidedBy: ALICE.id, channel: 'api', decidedAt, message: 'not the plums' })).toBeDefined();
    respond((request) => (isPerson(request, 'Something else') ? { text: 'Answering the new message.' } : { text: `Results: ${toolResults(request).map((result) => result.content).join(' | ')}` }));
    const body = await say(threadId, 'Something else');
    expect(body.run.status).toBe('succeeded');
    expect(body.messages.at(-1).content).toBe('Answering the new message.');
    expect(await memories(agentId)).toEqual(['likes figs']);
    const statusOf = async (id: string) => (await server.request('GET', `/api/approvals/${id}`)).body as Json;
    expect(await statusOf(byCall.call_yes!)).toMatchObject({ status: 'approved', executed: true });
    expect(await statusOf(byCall.call_no!)).toMatchObject({ status: 'rejected', message: 'not the plums' });
    expect(await statusOf(byCall.call_open!)).toMatchObject({ status: 'superseded', channel: 'system' });
    // What the model was told when it answered the person: the truth of each call.
    const answered = lastRequest();
    expect(lastOf(answered).content).toBe('Something else');
    const resultOf = (id: string) => toolResults(answered).find((result) => result.tool_call_id === id)!.content as string;
    expect(resultOf('call_yes')).not.toContain('before deciding');
    expect(resultOf('call_yes')).toContain('saved');
    expect(resultOf('call_no')).toContain('not the plums');
    expect(resultOf('call_open')).toContain('sent a new message before deciding');
    // The approved call ran once: a late resume finds nothing to do.
    expect(await memories(agentId)).toEqual(['likes figs']);
  });

  /** A step's calls decided as a person's decisions are recorded, without the resume job the service schedules after. */
  async function decideWithoutResume(ids: string[]): Promise<void> {
    const records = new SqlApprovalRepository((server.storage as SqlStorage).context);
    for (const id of ids) expect(await records.decide(id, { status: 'approved', decidedBy: ALICE.id, channel: 'api', decidedAt: new Date().toISOString() })).toBeDefined();
  }
  const silentPolicy = { enabled: true, delaysMs: { check_in: 600_000, question_unanswered: 600_000, task_incomplete: 600_000, waiting_for_decision: 600_000 }, minDelayMs: 10, maxPerSilence: 1 };

  it("I6: a person's message cancels the thread's pending follow-up timer on receipt, before a decided step is resumed", async () => {
    const { agentId, threadId, approvals, run, lastRequest } = await waitingApproval({ ...askMemoryWrite, autonomy: silentPolicy }, [{ id: 'call_pears', content: 'likes pears' }]);
    expect(run.status).toBe('interrupted');
    // A follow-up pending on the thread (a run that waits for an approval plans none; one planned before it would be this).
    const timerId = randomUUID();
    await new SqlTimerRepository((server.storage as SqlStorage).context).insert(
      { id: timerId, threadId, userId: ALICE.id, agentId, dueAt: new Date(Date.now() + 600_000).toISOString(), triggerType: 'question_unanswered', reason: 'the reply asked a question', attempt: 1, state: 'pending', stateReason: null, scheduledAgainst: null, sourceRunId: run.id as string },
      new Date().toISOString(),
    );
    const timer = async () => ((await server.request('GET', `/api/threads/${threadId}/timers?state=all&limit=100`)).body.timers as Json[]).find((candidate) => candidate.id === timerId);
    expect(await timer()).toMatchObject({ state: 'pending' });
    await decideWithoutResume([approvals[0]!.id as string]);
    // The resume's model call (after the approved call ran) streams slowly; the person's message is answered at once.
    const slow = Array.from({ length: 40 }, (_, index) => `word${index}`);
    respond((request) => (isPerson(request, 'Something new') ? { text: 'Answering the new message.' } : { chunks: slow, chunkDelayMs: 100 }));
    const answer = say(threadId, 'Something new');
    await waitFor(() => model.requests.some((request) => lastOf(request).role === 'tool'), waitLong, "the resume's model call");
    // While the resume's call is in flight (the message's own call has not come yet), the timer is already cancelled.
    expect(await timer()).toMatchObject({ state: 'cancelled', stateReason: 'a person sent a message' });
    expect(model.requests.some((request) => isPerson(request, 'Something new'))).toBe(false);
    const body = await answer;
    expect(body.run.status).toBe('succeeded');
    expect(body.messages.at(-1).content).toBe('Answering the new message.');
    expect(await memories(agentId)).toEqual(['likes pears']);
    expect(toolResults(lastRequest()).find((result) => result.tool_call_id === 'call_pears')!.content).toContain('saved');
  });

  it('I16: two parallel calls, one rejected: the run resumes only when both are decided and the approved one runs', async () => {
    const calls = [{ id: 'call_one', content: 'likes cats' }, { id: 'call_two', content: 'likes dogs' }];
    const { agentId, threadId, approvals, run, lastRequest } = await waitingApproval(askMemoryWrite, calls);
    expect(approvals.map((approval) => approval.toolCallId).sort()).toEqual(['call_one', 'call_two']);
    const byCall = Object.fromEntries(approvals.map((approval) => [approval.toolCallId, approval.id as string]));
    await decide(byCall.call_one!, { decision: 'reject' });
    expect((await runs(threadId)).map((candidate) => candidate.id)).toEqual([run.id]);
    await decide(byCall.call_two!, { decision: 'approve' });
    await runWhere(threadId, (candidate) => resumes(candidate, run) && candidate.status === 'succeeded');
    expect(await memories(agentId)).toEqual(['likes dogs']);
    const results = toolResults(lastRequest());
    expect(results.map((result) => result.tool_call_id).sort()).toEqual(['call_one', 'call_two']);
    expect(results.find((result) => result.tool_call_id === 'call_one')!.content).toContain('rejected');
    expect(results.find((result) => result.tool_call_id === 'call_two')!.content).toContain('"saved":true');
  });

  it('I16: the thread shows it waits; events go out on its stream: requested, expiring, expired; run.end says interrupted', async () => {
    writeOnRequest();
    // The warning goes out a fifth of the wait before the deadline: room for pg-boss's half-second polling.
    const agentId = await agentWith({ tools: { approval: { memory_write: { attended: 'ask', timeoutMs: 1_500 + options.slowMs * 4 } } } });
    const threadId = await threadOf(agentId);
    const events: Json[] = [];
    const socket = new WebSocket(`${server.url.replace('http', 'ws')}/api/ws?token=${ALICE.token}`);
    await new Promise((resolve, reject) => {
      socket.once('open', resolve);
      socket.once('error', reject);
    });
    socket.on('message', (data) => events.push(JSON.parse(String(data)) as Json));
    socket.send(JSON.stringify({ type: 'thread.subscribe', threadId }));
    await waitFor(() => events.some((event) => event.type === 'thread.subscribed'), waitLong, 'the subscription');
    const { run } = await say(threadId, 'Please remember this');
    expect(run.status).toBe('interrupted');
    expect((await server.request('GET', `/api/threads/${threadId}`)).body.status).toBe('interrupted');
    await waitFor(() => events.some((event) => event.type === 'approval.expired'), waitLong, 'approval.expired');
    await waitFor(() => events.filter((event) => event.type === 'run.end').length === 2, waitLong, 'the resumed run to end');
    socket.close();
    const types = events.map((event) => event.type);
    expect(types.indexOf('approval.requested')).toBeLessThan(types.indexOf('approval.expiring'));
    expect(types.indexOf('approval.expiring')).toBeLessThan(types.indexOf('approval.expired'));
    expect(events.find((event) => event.type === 'approval.requested')).toMatchObject({ tool: 'memory_write', arguments: { content: 'likes tea' }, attended: true });
    expect(events.filter((event) => event.type === 'run.end').map((event) => event.status)).toEqual(['interrupted', 'succeeded']);
    expect((await server.request('GET', `/api/threads/${threadId}`)).body.status).toBe('idle');
  });

  it('I16: while a thread waits, a schedule or webhook run on it is skipped with a stated reason', async () => {
    const { agentId, threadId, approvals, lastRequest } = await waitingApproval();
    const input = new HumanMessage({ content: 'scheduled task', additional_kwargs: { synthetic: true, trigger_type: 'cron' } });
    const declined = await server.services.conversations.tryRunTriggered(ALICE.id, threadId, { trigger: 'cron', input }, {});
    expect(declined).toEqual({ declined: 'awaiting_approval' });
    await expect(server.services.conversations.runTriggered(ALICE.id, threadId, { trigger: 'webhook', input })).rejects.toMatchObject({ code: 'THREAD_AWAITING_APPROVAL' });
    expect(server.logs.some((line) => line.msg === 'a system-started run was skipped' && line.threadId === threadId)).toBe(true);
    // A real schedule fire on the waiting thread: recorded as skipped, with its reason; no run.
    const at = new Date(Date.now() + 1_000).toISOString();
    const schedule = await server.request('POST', '/api/schedules', { body: { name: 'nightly', timing: { kind: 'at', at }, agentId, target: 'thread', threadId, task: 'Summarise the day' } });
    expect(schedule.status, JSON.stringify(schedule.body)).toBe(201);
    let fires: Json[] = [];
    await waitFor(async () => {
      fires = (await server.request('GET', `/api/schedules/${schedule.body.id}/fires`)).body.fires ?? [];
      return fires.some((fire) => fire.status !== 'running');
    }, waitLong, 'the schedule to fire');
    expect(fires[0]).toMatchObject({ status: 'skipped', reason: 'awaiting_approval' });
    expect((await runs(threadId)).map((run) => run.trigger)).toEqual(['user']);
    await decide(approvals[0]!.id, { decision: 'reject' });
  });

  /** A follow-up and a check-in planned on the thread, waited for until both came due: what became of each. */
  async function followUpAndCheckInDue(agentId: string, threadId: string, runId: string): Promise<{ timer: Json | undefined; checkIn: Json | undefined }> {
    const planned = await server.services.autonomy.planFollowUp(ALICE.id, threadId, 'Anything else?');
    expect(planned).toBeDefined();
    const scheduled = await server.services.checkIns.schedule({ userId: ALICE.id, agentId, threadId, runId }, { inSeconds: 0.2, reason: 'see if they decided' });
    const now = async () => ({
      timer: ((await server.request('GET', `/api/threads/${threadId}/timers?state=all&limit=100`)).body.timers as Json[]).find((candidate) => candidate.id === planned!.id),
      checkIn: ((await server.request('GET', `/api/threads/${threadId}/check-ins?state=all`)).body.checkIns as Json[]).find((candidate) => candidate.id === scheduled.id),
    });
    await waitFor(async () => {
      const { timer, checkIn } = await now();
      return timer?.state !== 'pending' && checkIn?.state !== 'pending';
    }, waitLong, 'the follow-up and the check-in to come due');
    return now();
  }

  it('I16: while a thread waits, a follow-up or a check-in due on it starts no run: each is skipped with a logged reason', async () => {
    const policy = { enabled: true, delaysMs: { check_in: 150, question_unanswered: 150, task_incomplete: 150, waiting_for_decision: 150 }, minDelayMs: 10, maxPerSilence: 1, busyRetryMs: 100 };
    const { agentId, threadId, approvals, run } = await waitingApproval({ ...askMemoryWrite, autonomy: policy });
    expect(run.status).toBe('interrupted');
    const { timer, checkIn } = await followUpAndCheckInDue(agentId, threadId, run.id as string);
    expect(timer).toMatchObject({ state: 'skipped', stateReason: 'awaiting_approval' });
    expect(checkIn).toMatchObject({ state: 'skipped', stateReason: 'awaiting_approval' });
    expect(server.logs.some((line) => line.msg === 'follow-up not sent' && line.reason === 'awaiting_approval' && line.threadId === threadId)).toBe(true);
    expect(server.logs.some((line) => line.msg === 'check-in skipped' && line.reason === 'awaiting_approval' && line.threadId === threadId)).toBe(true);
    expect((await runs(threadId)).map((candidate) => candidate.trigger)).toEqual(['user']);
    await decide(approvals[0]!.id, { decision: 'reject' });
  });

  it('I16: a decided step whose resume has not run yet still holds off a check-in and a follow-up: the approved call is not closed as superseded, and runs once when the step resumes', async () => {
    const policy = { enabled: true, delaysMs: { check_in: 150, question_unanswered: 150, task_incomplete: 150, waiting_for_decision: 150 }, minDelayMs: 10, maxPerSilence: 1, busyRetryMs: 100 };
    const { agentId, threadId, approvals, run, lastRequest } = await waitingApproval({ ...askMemoryWrite, autonomy: policy }, [{ id: 'call_plums', content: 'likes plums' }]);
    expect(run.status).toBe('interrupted');
    // Approved, its resume job not yet run: nothing is pending, but the step still waits.
    await decideWithoutResume([approvals[0]!.id as string]);
    const { timer, checkIn } = await followUpAndCheckInDue(agentId, threadId, run.id as string);
    expect(timer).toMatchObject({ state: 'skipped', stateReason: 'awaiting_approval' });
    expect(checkIn).toMatchObject({ state: 'skipped', stateReason: 'awaiting_approval' });
    expect((await runs(threadId)).map((candidate) => candidate.trigger)).toEqual(['user']);
    // The step is carried out when the person next writes: the approved call runs once.
    respond((request) => (isPerson(request, 'Go on') ? { text: 'Going on.' } : { text: 'Saved it.' }));
    expect((await say(threadId, 'Go on')).run.status).toBe('succeeded');
    expect(await memories(agentId)).toEqual(['likes plums']);
    expect(toolResults(lastRequest()).find((result) => result.tool_call_id === 'call_plums')!.content).toContain('saved');
  });

  // ---------- the same decisions on an autonomous follow-up, after a restart ----------
  /**
   * An autonomous follow-up that makes `calls` (memory_write, `ask` when nobody watches, the
   * default) and waits; then the server restarts. Returns what a person finds afterwards.
   */
  async function waitingFollowUp(calls: Array<{ id: string; content: string }>, tools: Json = {}) {
    const tag = `[thread ${randomUUID().slice(0, 8)}]`;
    respond((request) => {
      if (lastOf(request).role === 'tool') return { text: `Results: ${toolResults(request).map((result) => result.content).join(' | ')}` };
      if (isPerson(request, 'Hello')) return { text: 'Shall I note your preferences?' };
      if (isPerson(request, 'Actually')) return { text: `Answering: ${toolResults(request).map((result) => result.content).join(' | ')}` };
      // The follow-up's prompt: the agent acts while nobody watches.
      return { toolCalls: calls.map((call) => ({ id: call.id, name: 'memory_write', arguments: { content: call.content } })) };
    });
    const policy = { enabled: true, delaysMs: { check_in: 150, question_unanswered: 150, task_incomplete: 150, waiting_for_decision: 150 }, minDelayMs: 10, maxPerSilence: 1, busyRetryMs: 100 };
    const agentId = await agentWith({ autonomy: policy, tools });
    const threadId = await threadOf(agentId);
    await say(threadId, `Hello ${tag}`);
    const waiting = await runWhere(threadId, (run) => run.trigger === 'autonomy' && run.status !== 'running');
    expect(waiting.status).toBe('interrupted');
    server = await server.restart();
    const restartedAt = Date.now();
    const approvals = await approvalsOf(threadId);
    expect(approvals.map((approval) => approval.toolCallId).sort()).toEqual(calls.map((call) => call.id).sort());
    expect(approvals.every((approval) => approval.attended === false && approval.runId === waiting.id)).toBe(true);
    const lastRequest = () => [...model.requests].reverse().find((request) => JSON.stringify(request.messages).includes(tag))!;
    const byCall = Object.fromEntries(approvals.map((approval) => [approval.toolCallId as string, approval]));
    return { agentId, threadId, waiting, approvals, byCall, restartedAt, lastRequest };
  }
  /** The follow-up fired once, ever: the run that waited and (when it resumed) the one that resumed it. */
  async function expectFollowUpOnce(threadId: string, statuses: string[]) {
    await waitFor(async () => (await runs(threadId)).every((run) => run.status !== 'running'), waitLong, 'runs to end');
    const timers = (await server.request('GET', `/api/threads/${threadId}/timers?state=all&limit=100`)).body.timers as Json[];
    expect(timers.filter((timer) => timer.state === 'fired')).toHaveLength(1);
    expect((await runs(threadId)).filter((run) => run.trigger === 'autonomy').map((run) => run.status)).toEqual(statuses);
  }

  it("I8: a person's message still pre-empts an autonomous run on a thread whose last tool step was decided and resumed long ago", async () => {
    const { agentId, threadId, waiting, approvals } = await waitingFollowUp([{ id: 'call_fu_old', content: 'likes hail' }]);
    await decide(approvals[0]!.id as string, { decision: 'approve' });
    await runWhere(threadId, (run) => resumes(run, waiting) && run.status !== 'running');
    // Later, a check-in's run streams slowly; the person writes meanwhile.
    const slow = Array.from({ length: 40 }, (_, index) => `word${index}`).join(' ');
    respond((request) => (isPerson(request, 'Actually') ? { text: 'Answering you.' } : { text: slow, chunkDelayMs: 100 }));
    await server.services.checkIns.schedule({ userId: ALICE.id, agentId, threadId, runId: waiting.id as string }, { inSeconds: 0.2, reason: 'a slow check' });
    const checkInRun = await runWhere(threadId, (run) => run.trigger === 'check_in' && run.status === 'running');
    await waitFor(async () => model.requests.length > 0, waitLong, 'the check-in to call the model');
    const answer = await say(threadId, 'Actually, one more thing');
    expect(answer.run).toMatchObject({ status: 'succeeded', trigger: 'user' });
    expect((await runs(threadId)).find((run) => run.id === checkInRun.id)).toMatchObject({ status: 'cancelled', reason: PREEMPTED_REASON });
  });

  it('I16, I12: on an autonomous follow-up after a restart: reject (the model reads why), another user 404, a different second decision 409', async () => {
    const { agentId, threadId, waiting, approvals, lastRequest } = await waitingFollowUp([{ id: 'call_fu_reject', content: 'likes rain' }]);
    const id = approvals[0]!.id as string;
    expect((await decide(id, { decision: 'reject' }, BOB.token)).status).toBe(404);
    expect((await server.request('GET', `/api/approvals/${id}`, { token: BOB.token })).status).toBe(404);
    expect((await decide(id, { decision: 'reject', message: 'keep that private' })).body).toMatchObject({ status: 'rejected', channel: 'api' });
    const second = await decide(id, { decision: 'approve' });
    expect(second.status).toBe(409);
    expect(second.body.error.code).toBe('APPROVAL_ALREADY_DECIDED');
    expect(await runWhere(threadId, (run) => resumes(run, waiting) && run.status !== 'running')).toMatchObject({ status: 'succeeded', trigger: 'autonomy' });
    expect(toolResults(lastRequest()).at(-1)!.content).toContain('keep that private');
    expect(await memories(agentId)).toEqual([]);
    await expectFollowUpOnce(threadId, ['interrupted', 'succeeded']);
  });

  it('I16: on an autonomous follow-up after a restart: an invalid edit is refused (400), a valid one runs once with exactly its arguments', async () => {
    const { agentId, threadId, waiting, approvals } = await waitingFollowUp([{ id: 'call_fu_edit', content: 'likes snow' }]);
    const id = approvals[0]!.id as string;
    const invalid = await decide(id, { decision: 'edit', arguments: { content: '' } });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error.code).toBe('APPROVAL_ARGUMENTS_INVALID');
    expect((await decide(id, { decision: 'edit', arguments: { content: 'likes fresh snow' } })).body.status).toBe('edited');
    expect(await runWhere(threadId, (run) => resumes(run, waiting) && run.status !== 'running')).toMatchObject({ status: 'succeeded' });
    expect(await memories(agentId)).toEqual(['likes fresh snow']);
    expect((await server.request('GET', `/api/approvals/${id}`)).body).toMatchObject({ status: 'edited', executed: true });
    await expectFollowUpOnce(threadId, ['interrupted', 'succeeded']);
  });

  it('I16: pending approvals survive a restart with their deadlines re-armed: an autonomous request expires (not a refusal) after the restart', async () => {
    const timeoutMs = 2_500 + options.slowMs * 4;
    const { agentId, threadId, waiting, approvals, restartedAt, lastRequest } = await waitingFollowUp([{ id: 'call_fu_expire', content: 'likes fog' }], { approval: { memory_write: { timeoutMs } } });
    const [request] = approvals;
    // Still pending when the restarted server listed it, unless its deadline had passed by then.
    expect(request!.status).toBe(Date.parse(request!.expiresAt) > restartedAt ? 'pending' : 'expired');
    expect(await runWhere(threadId, (run) => resumes(run, waiting) && run.status !== 'running')).toMatchObject({ status: 'succeeded' });
    expect((await server.request('GET', `/api/approvals/${request!.id}`)).body).toMatchObject({ status: 'expired', decidedBy: 'system', channel: 'system', executed: false });
    expect(toolResults(lastRequest()).at(-1)!.content).toContain('Nobody answered');
    expect(await memories(agentId)).toEqual([]);
    await expectFollowUpOnce(threadId, ['interrupted', 'succeeded']);
  });

  it("I16: on an autonomous follow-up after a restart: a person's message supersedes the waiting call and is answered; the follow-up is not repeated", async () => {
    const { agentId, threadId, approvals, lastRequest } = await waitingFollowUp([{ id: 'call_fu_moot', content: 'likes wind' }]);
    const body = await say(threadId, 'Actually, forget it');
    expect(body.run.status).toBe('succeeded');
    expect((await server.request('GET', `/api/approvals/${approvals[0]!.id}`)).body).toMatchObject({ status: 'superseded', channel: 'system' });
    expect(JSON.stringify(toolResults(lastRequest()))).toContain('sent a new message before deciding');
    expect(await memories(agentId)).toEqual([]);
    await expectFollowUpOnce(threadId, ['interrupted']);
  });

  it('I16: two parallel calls of an autonomous follow-up after a restart, one rejected: the approved one runs once and both results reach the model', async () => {
    const { agentId, threadId, waiting, byCall, lastRequest } = await waitingFollowUp([
      { id: 'call_fu_one', content: 'likes sun' },
      { id: 'call_fu_two', content: 'likes moon' },
    ]);
    await decide(byCall.call_fu_one!.id, { decision: 'approve' });
    expect((await runs(threadId)).filter((run) => run.trigger === 'autonomy')).toHaveLength(1); // waits for the other decision
    await decide(byCall.call_fu_two!.id, { decision: 'reject' });
    expect(await runWhere(threadId, (run) => resumes(run, waiting) && run.status !== 'running')).toMatchObject({ status: 'succeeded' });
    expect(await memories(agentId)).toEqual(['likes sun']);
    const results = toolResults(lastRequest());
    expect(results.find((result) => result.tool_call_id === 'call_fu_one')!.content).toContain('"saved":true');
    expect(results.find((result) => result.tool_call_id === 'call_fu_two')!.content).toContain('rejected');
    await expectFollowUpOnce(threadId, ['interrupted', 'succeeded']);
  });

  // ---------- check-ins the agent sets itself (I5, I7) ----------
  it('I5: a follow-up that calls a tool makes no more model calls than the daily budget allows: the tool loop reserves each call', async () => {
    const followUpPrompt = TRIGGER_PROMPTS.check_in;
    respond((request) => {
      if (!JSON.stringify(request.messages).includes(followUpPrompt)) return { text: 'Noted.' };
      const sinceLastHuman = request.messages.slice(request.messages.map((message) => message.role).lastIndexOf('user') + 1);
      return sinceLastHuman.some((message) => message.role === 'tool') ? { text: 'Just checking in.' } : { toolCalls: [{ id: 'call_time', name: 'current_time', arguments: { timeZone: 'UTC' } }] };
    });
    const budgetOf = async (modelCallsPerDay: number) => {
      const agentId = await agentWith({ autonomy: { enabled: true, delaysMs: { check_in: 150, question_unanswered: 150, task_incomplete: 150, waiting_for_decision: 150 }, minDelayMs: 10, maxPerSilence: 1, modelCallsPerDay } });
      const threadId = await threadOf(agentId);
      await say(threadId, 'Hi');
      const followUp = await runWhere(threadId, (run) => run.trigger === 'autonomy' && run.status !== 'running');
      const used = await new SqlTimerRepository((server.storage as SqlStorage).context).modelCallsUsed(ALICE.id, agentId, localDay(new Date(), 'UTC'));
      const history = (await server.request('GET', `/api/threads/${threadId}/history`)).body.messages as Json[];
      return { followUp, used, replies: history.filter((message) => message.role === 'assistant').map((message) => message.content) };
    };
    // One call a day: the follow-up's first call (the tool call) is the day's; it ends with the tool's result, no second call.
    const before = model.requestsMentioning(followUpPrompt).length;
    const one = await budgetOf(1);
    expect(model.requestsMentioning(followUpPrompt).length - before).toBe(1);
    expect(one).toMatchObject({ followUp: { status: 'succeeded' }, used: 1 });
    expect(one.replies).not.toContain('Just checking in.');
    // Two: the call after the tool's result is reserved and made.
    const two = await budgetOf(2);
    expect(model.requestsMentioning(followUpPrompt).length - before).toBe(3);
    expect(two).toMatchObject({ used: 2 });
    expect(two.replies.at(-1)).toBe('Just checking in.');
  });

  const quietPolicy = { enabled: true, delaysMs: { check_in: 600_000, question_unanswered: 600_000, task_incomplete: 600_000, waiting_for_decision: 600_000 }, minDelayMs: 10, maxPerSilence: 1 };
  async function checkIns(threadId: string, state = 'all', token = ALICE.token) {
    return server.request('GET', `/api/threads/${threadId}/check-ins?state=${state}`, { token });
  }
  /** The model sets a check-in when asked to, and otherwise answers in text. */
  function setsCheckIn(inSeconds: number, reason: string): void {
    respond((request) => {
      if (isPerson(request, 'Remind me')) return { toolCalls: [{ id: `call_${randomUUID().slice(0, 6)}`, name: 'schedule_check_in', arguments: { in_seconds: inSeconds, reason } }] };
      if (lastOf(request).role === 'tool') return { text: `Set: ${toolResults(request).at(-1)!.content}` };
      return { text: 'Checking in as promised: did you stretch' };
    });
  }

  it("I7, I1, I2: a check-in the agent set survives a person's message and a restart, fires once, with its reason in the envelope and its prompt internal", async () => {
    setsCheckIn(2, 'ask whether they stretched');
    const agentId = await agentWith({ autonomy: quietPolicy });
    const threadId = await threadOf(agentId);
    await say(threadId, 'Remind me to stretch in a bit');
    const [pending] = (await checkIns(threadId, 'pending')).body.checkIns as Json[];
    expect(pending).toMatchObject({ state: 'pending', reason: 'ask whether they stretched' });
    await say(threadId, 'Thanks!'); // a person's message does not cancel it (the agent promised it)
    expect(((await checkIns(threadId, 'pending')).body.checkIns as Json[]).map((checkIn) => checkIn.id)).toEqual([pending!.id]);
    server = await server.restart();
    const fired = await runWhere(threadId, (run) => run.trigger === 'check_in' && run.status !== 'running');
    expect(fired).toMatchObject({ status: 'succeeded', meta: { trigger: 'check_in', check_in_id: pending!.id, reason: 'ask whether they stretched', set_at_utc: pending!.setAt } });
    const request = model.requests.find((candidate) => JSON.stringify(candidate.messages).includes('set yourself a check-in'))!;
    const envelope = request.messages.find((message) => typeof message.content === 'string' && message.content.includes('"check_in"'));
    expect(envelope?.content).toContain('ask whether they stretched');
    expect(envelope?.content).toContain(pending!.setAt.slice(0, 19));
    const visible = (await server.request('GET', `/api/threads/${threadId}/history`)).body.messages as Json[];
    expect(JSON.stringify(visible)).not.toContain('set yourself a check-in');
    expect(visible.at(-1)).toMatchObject({ role: 'assistant', content: 'Checking in as promised: did you stretch' });
    const [after] = (await checkIns(threadId)).body.checkIns as Json[];
    expect(after).toMatchObject({ state: 'fired', runId: fired.id });
    await waitFor(async () => (await runs(threadId)).every((run) => run.status !== 'running'), waitLong, 'runs to end');
    expect((await runs(threadId)).filter((run) => run.trigger === 'check_in')).toHaveLength(1);
  });

  it('I5: a check-in due in quiet hours waits them out (no model call); the person can cancel it; I12: others cannot', async () => {
    const now = new Date();
    const clock = (offsetMinutes: number) => new Date(now.getTime() + offsetMinutes * 60_000).toISOString().slice(11, 16);
    setsCheckIn(1, 'see how the stretching went');
    const agentId = await agentWith({ autonomy: { ...quietPolicy, timeZone: 'UTC', quietHours: { start: clock(-60), end: clock(90), mode: 'defer' } } });
    const threadId = await threadOf(agentId);
    await say(threadId, 'Remind me later');
    const [pending] = (await checkIns(threadId, 'pending')).body.checkIns as Json[];
    await waitFor(async () => Date.parse(((await checkIns(threadId)).body.checkIns as Json[])[0]!.dueAt) > Date.now() + 30 * 60_000, waitLong, 'the check-in to be deferred');
    expect(((await checkIns(threadId)).body.checkIns as Json[])[0]).toMatchObject({ id: pending!.id, state: 'pending' });
    expect((await runs(threadId)).filter((run) => run.trigger === 'check_in')).toHaveLength(0);

    expect((await checkIns(threadId, 'all', BOB.token)).status).toBe(404);
    const foreign = await server.request('DELETE', `/api/threads/${threadId}/check-ins/${pending!.id}`, { token: BOB.token });
    expect(foreign.status).toBe(404);
    const cancelled = await server.request('DELETE', `/api/threads/${threadId}/check-ins/${pending!.id}`);
    expect(cancelled.body).toMatchObject({ state: 'cancelled', stateReason: 'cancelled by the person' });
    const again = await server.request('DELETE', `/api/threads/${threadId}/check-ins/${pending!.id}`);
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('TIMER_NOT_PENDING');
  });

  it('I16: a check-in call that asks is edited like any tool: it runs with exactly the edited arguments; invalid ones are refused with 400', async () => {
    setsCheckIn(600, 'ask how the run went');
    const agentId = await agentWith({ autonomy: quietPolicy, tools: { approval: { schedule_check_in: { attended: 'ask' } } } });
    const threadId = await threadOf(agentId);
    const { run } = await say(threadId, 'Remind me about my run');
    expect(run.status).toBe('interrupted');
    const [approval] = await approvalsOf(threadId);
    expect(approval).toMatchObject({ status: 'pending', tool: 'schedule_check_in', arguments: { in_seconds: 600, reason: 'ask how the run went' } });
    const invalid = await decide(approval!.id, { decision: 'edit', arguments: { in_seconds: 1200 } });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error.code).toBe('APPROVAL_ARGUMENTS_INVALID');
    expect(invalid.body.error.message).toContain('reason');
    const edited = await decide(approval!.id, { decision: 'edit', arguments: { in_seconds: 1200, reason: 'ask about the marathon' } });
    expect(edited.status, JSON.stringify(edited.body)).toBe(200);
    expect(edited.body).toMatchObject({ status: 'edited', editedArguments: { in_seconds: 1200, reason: 'ask about the marathon' } });
    await runWhere(threadId, (candidate) => resumes(candidate, run) && candidate.status === 'succeeded');
    const checkInsNow = (await checkIns(threadId, 'pending')).body.checkIns as Json[];
    expect(checkInsNow.map((checkIn) => checkIn.reason)).toEqual(['ask about the marathon']);
    expect((await server.request('GET', `/api/approvals/${approval!.id}`)).body).toMatchObject({ status: 'edited', executed: true });
  });

  it('a check-in outside the policy (autonomy off, beyond the horizon) is refused and the model is told why', async () => {
    setsCheckIn(1, 'too soon to matter');
    const threadId = await threadOf(await agentWith());
    await say(threadId, 'Remind me tomorrow');
    expect(toolResults(model.requestsMentioning('Remind me tomorrow').at(-1)!).at(-1)!.content).toContain('autonomy, which is off');
    setsCheckIn(10 * 86_400, 'far away'); // beyond the policy's maxDelayMs (7 days)
    const distant = await threadOf(await agentWith({ autonomy: quietPolicy }));
    await say(distant, 'Remind me next year');
    expect(toolResults(model.requestsMentioning('Remind me next year').at(-1)!).at(-1)!.content).toContain('at most');
    expect(((await checkIns(distant)).body.checkIns as Json[])).toEqual([]);
  });

  it('I12: the autonomy report counts, per trigger type, runs, replies and whether the person answered', async () => {
    respond((request) => {
      if (isPerson(request, 'Hi there')) return { text: 'Shall we plan the trip?' };
      if (isPerson(request, 'Yes, let us')) return { text: 'Great, let us start.' };
      return { text: 'Following up: shall we plan the trip?' };
    });
    const policy = { enabled: true, delaysMs: { check_in: 150, question_unanswered: 150, task_incomplete: 150, waiting_for_decision: 150 }, minDelayMs: 10, maxPerSilence: 1, busyRetryMs: 100 };
    const agentId = await agentWith({ autonomy: policy });
    const threadId = await threadOf(agentId);
    await say(threadId, 'Hi there');
    await runWhere(threadId, (run) => run.trigger === 'autonomy' && run.status === 'succeeded');
    await say(threadId, 'Yes, let us');
    const report = await server.request('GET', `/api/agents/${agentId}/autonomy/report`);
    expect(report.status).toBe(200);
    expect(report.body.triggers.find((entry: Json) => entry.triggerType === 'autonomy:question_unanswered')).toMatchObject({ runs: 1, replies: 1, answeredWithin1h: 1, answeredWithin24h: 1, cancelled: 0 });
    const foreign = await server.request('GET', `/api/agents/${agentId}/autonomy/report`, { token: BOB.token });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe('AGENT_NOT_FOUND');
  });

  it('I16: across a crash an approved call never runs twice: one cut short mid-call is not run again, a finished one is reused', async () => {
    const calls = [{ id: 'call_cut', content: 'likes jam' }, { id: 'call_done', content: 'likes bread' }];
    const { agentId, threadId, approvals, run, lastRequest } = await waitingApproval(askMemoryWrite, calls);
    const byCall = Object.fromEntries(approvals.map((approval) => [approval.toolCallId, approval.id as string]));
    // What a process that died during the resumed step leaves behind: one call started, one finished but its step unsaved.
    const records = new SqlApprovalRepository((server.storage as SqlStorage).context);
    expect(await records.beginExecution(byCall.call_cut!)).toBe(true);
    expect(await records.beginExecution(byCall.call_done!)).toBe(true);
    await records.finishExecution(byCall.call_done!, '{"saved":true,"id":"from-the-first-process"}', 'succeeded');
    await decide(byCall.call_cut!, { decision: 'approve' });
    await decide(byCall.call_done!, { decision: 'approve' });
    await runWhere(threadId, (candidate) => resumes(candidate, run) && candidate.status === 'succeeded');
    expect(await memories(agentId)).toEqual([]);
    const results = toolResults(lastRequest());
    expect(results.find((result) => result.tool_call_id === 'call_cut')!.content).toContain('whether it finished is unknown');
    expect(results.find((result) => result.tool_call_id === 'call_done')!.content).toBe('{"saved":true,"id":"from-the-first-process"}');
  });

  it('I16: a step run again after a cancel mid-step reports an approved call whose tool threw as failed, not succeeded: to the model, in the history, in the API', async () => {
    // A fetch target that holds every request: the second call of the step is still running when the run is cancelled.
    const held: ServerResponse[] = [];
    const target = createServer((_request, response) => void held.push(response));
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
    const port = (target.address() as AddressInfo).port;
    try {
      const tag = `[thread ${randomUUID().slice(0, 8)}]`;
      respond((request) => {
        if (lastOf(request).role === 'tool') return { text: `Results: ${toolResults(request).map((result) => result.content).join(' | ')}` };
        if (isPerson(request, 'Fetch it')) {
          return {
            toolCalls: [
              { id: 'call_zone', name: 'current_time', arguments: { timeZone: 'Nowhere/Atlantis' } },
              { id: 'call_slow', name: 'http_fetch', arguments: { url: `http://127.0.0.1:${port}/slow` } },
            ],
          };
        }
        return { text: 'Answering the new message.' };
      });
      const agentId = await agentWith({ tools: { fetch: { allowedHosts: [`127.0.0.1:${port}`] }, approval: { current_time: { attended: 'ask' }, http_fetch: { attended: 'ask' } } } });
      const threadId = await threadOf(agentId);
      const first = (await say(threadId, `Fetch it ${tag}`)).run as Json;
      expect(first.status).toBe('interrupted');
      const byCall = Object.fromEntries((await approvalsOf(threadId)).map((approval) => [approval.toolCallId, approval.id as string]));
      expect((await decide(byCall.call_zone!, { decision: 'approve' })).status).toBe(200);
      expect((await decide(byCall.call_slow!, { decision: 'approve' })).status).toBe(200);
      // The resumed step: current_time threw and finished; http_fetch is held at the target.
      const approval = async (id: string) => (await server.request('GET', `/api/approvals/${id}`)).body as Json;
      await waitFor(async () => held.length === 1 && (await approval(byCall.call_zone!)).executed === true, waitLong, 'the failed call to finish while the other runs');
      const resumed = await runWhere(threadId, (candidate) => resumes(candidate, first) && candidate.status === 'running');
      expect((await server.request('POST', `/api/runs/${resumed.id}/cancel`)).status).toBe(202);
      await runWhere(threadId, (candidate) => candidate.id === resumed.id && candidate.status === 'cancelled');
      expect(await approval(byCall.call_zone!)).toMatchObject({ status: 'approved', executed: true, outcome: 'failed' });
      expect(await approval(byCall.call_slow!)).toMatchObject({ status: 'approved', executed: false, outcome: null });
      // Another user sees neither outcome (I12).
      expect((await server.request('GET', `/api/approvals/${byCall.call_zone!}`, { token: BOB.token })).status).toBe(404);

      // The person writes: the decided step is carried out again first, from the records.
      const body = await say(threadId, 'Something else');
      expect(body.run.status).toBe('succeeded');
      expect(held).toHaveLength(1); // neither call ran twice
      const replayed = [...model.requests].reverse().find((request) => JSON.stringify(request.messages).includes(tag) && lastOf(request).role === 'tool')!;
      const resultOf = (id: string) => toolResults(replayed).find((result) => result.tool_call_id === id)!.content as string;
      expect(resultOf('call_zone')).toContain('unknown time zone');
      expect(resultOf('call_slow')).toContain('whether it finished is unknown');
      const history = (await server.request('GET', `/api/threads/${threadId}/history?include=internal`)).body.messages as Json[];
      const toolOf = (id: string) => history.find((message) => message.role === 'tool' && message.additionalKwargs?.approval_id === id);
      expect(toolOf(byCall.call_zone!)?.additionalKwargs).toMatchObject({ tool_name: 'current_time', tool_status: 'failed' });
      expect(toolOf(byCall.call_slow!)?.additionalKwargs).toMatchObject({ tool_name: 'http_fetch', tool_status: 'unknown' });
      // The tool messages the model was given (LangChain's status: an error, as when the tool threw in the run itself).
      const state = await server.storage.checkpointer.getTuple({ configurable: { thread_id: threadId } });
      const stateTool = (state?.checkpoint.channel_values.messages as ToolMessage[]).find((message) => ToolMessage.isInstance(message) && message.tool_call_id === 'call_zone');
      expect(stateTool?.status).toBe('error');
    } finally {
      for (const response of held) response.destroy();
      target.closeAllConnections();
      await new Promise<void>((resolve) => target.close(() => resolve()));
    }
  });

  it('I16, I12: a thread deleted while a decision on its approval is on its way: the decision answers 404 APPROVAL_NOT_FOUND, not 409 "already pending"; another user 404 throughout', async () => {
    const { agentId, threadId, approvals } = await waitingApproval();
    const id = approvals[0]!.id as string;
    // Another user can neither decide the request nor delete its thread (I12).
    const foreign = await decide(id, { decision: 'approve' }, BOB.token);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe('APPROVAL_NOT_FOUND');
    expect((await server.request('DELETE', `/api/threads/${threadId}`, { token: BOB.token })).status).toBe(404);
    // The owner's decision is held after it read the request pending, before it writes it.
    const prototype = SqlApprovalRepository.prototype;
    const original = prototype.decide;
    let reached = false;
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    prototype.decide = async function (this: SqlApprovalRepository, approvalId, decision, alsoWithin) {
      if (approvalId === id && decision.decidedBy === ALICE.id) {
        reached = true;
        await held;
      }
      return original.call(this, approvalId, decision, alsoWithin);
    };
    try {
      const decision = decide(id, { decision: 'approve' });
      await waitFor(() => reached, waitLong, 'the decision to read the request pending');
      expect((await server.request('DELETE', `/api/threads/${threadId}`)).status).toBe(204);
      release();
      const answered = await decision;
      expect(answered.status, JSON.stringify(answered.body)).toBe(404);
      expect(answered.body.error.code).toBe('APPROVAL_NOT_FOUND');
    } finally {
      release();
      prototype.decide = original;
    }
    expect((await server.request('GET', `/api/approvals/${id}`)).status).toBe(404);
    expect((await decide(id, { decision: 'approve' })).body.error.code).toBe('APPROVAL_NOT_FOUND');
    expect((await decide(id, { decision: 'approve' }, BOB.token)).body.error.code).toBe('APPROVAL_NOT_FOUND');
    expect(await memories(agentId)).toEqual([]);
  });
}
