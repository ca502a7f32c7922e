/**
 * Tool approval policy in planner agents (issue 16): the same policy shape (`tools.approval`)
 * and the same approval machinery as chat agents — `deny` removes a tool from what the
 * planner model is offered; `ask` pauses the run durably (interrupt(), an approval record,
 * run status `interrupted`), decided through /api/approvals, resumed, and the approved call
 * runs exactly once with exactly the approved arguments. A real server on a real database,
 * the planner's scripted model (the only thing faked).
 */
import { randomUUID } from 'node:crypto';
import { HumanMessage } from '@langchain/core/messages';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { approve, execute, noKnowledge, step, strategicPlan, tacticalPlan } from '../helpers/planner-scripts.js';
import { always, ScriptedChatModel } from '../helpers/scripted-model.js';
import { ALICE, BOB, startTestServer, type Backend, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';

type Json = Record<string, any>;

export function plannerApprovalsSuite(backend: () => Backend, options: { slowMs: number }): void {
  let server: TestServer;
  let model = new ScriptedChatModel();
  const waitLong = 20_000 + options.slowMs * 10;

  beforeAll(async () => {
    server = await startTestServer(backend(), { models: () => model });
  });
  afterAll(async () => {
    await server?.destroy();
  });

  /** One milestone, one step that writes a memory; the critics approve; a final reply. */
  const writeScript = (content = 'The trip is booked') =>
    new ScriptedChatModel({
      knowledge_plan: [noKnowledge],
      strategic_plan: [strategicPlan('Remember the trip', 'Note it')],
      tactical_plan: [tacticalPlan(step('write it down', ['memory_write']))],
      executor_step: [execute([{ tool: 'memory_write', args: { content } }], true, 'noted')],
      tactical_critique: always(approve()),
      strategic_critique: [approve()],
      text: ['Done: the trip is noted.'],
    });

  async function plannerThread(tools: Json, planner?: Json): Promise<{ agentId: string; threadId: string }> {
    const agentId = `pa-${randomUUID().slice(0, 8)}`;
    const created = await server.request('POST', '/api/agents', { body: { id: agentId, name: 'Planner', kind: 'planner', systemPrompt: 'You plan.', tools } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    if (planner) expect((await server.request('PUT', `/api/agents/${agentId}/planner`, { body: planner })).status).toBe(200);
    const thread = await server.request('POST', '/api/threads', { body: { agentId } });
    return { agentId, threadId: thread.body.id as string };
  }
  async function say(threadId: string, content: string): Promise<Json> {
    const response = await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content } });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return response.body.run as Json;
  }
  async function runs(threadId: string): Promise<Json[]> {
    return ((await server.request('GET', `/api/threads/${threadId}/runs?limit=100`)).body.runs as Json[]).reverse();
  }
  async function approvalsOf(threadId: string): Promise<Json[]> {
    const response = await server.request('GET', `/api/approvals?threadId=${threadId}`);
    expect(response.status).toBe(200);
    return response.body.approvals as Json[];
  }
  async function memories(agentId: string): Promise<string[]> {
    return ((await server.request('GET', `/api/agents/${agentId}/memories?limit=100`)).body.memories as Json[]).map((memory) => memory.content as string);
  }
  async function planOf(threadId: string): Promise<Json> {
    const plans = (await server.request('GET', `/api/threads/${threadId}/plans`)).body.plans as Json[];
    return (await server.request('GET', `/api/plans/${plans[0]!.id}`)).body as Json;
  }
  async function resumedRun(threadId: string, waiting: Json): Promise<Json> {
    let found: Json | undefined;
    await waitFor(
      async () => Boolean((found = (await runs(threadId)).find((run) => run.id !== waiting.id && run.correlationId === waiting.correlationId && run.status !== 'running'))),
      waitLong,
      'the resumed run',
    );
    return found!;
  }
  const offeredTo = (call: { messages: Array<{ content: unknown }> }) => JSON.stringify(call.messages.map((message) => message.content));

  it('I16: ask in a planner step: interrupted, survives a restart, approved, runs once with the approved arguments, the model is not asked again', async () => {
    model = writeScript();
    const { agentId, threadId } = await plannerThread({ approval: { memory_write: { attended: 'ask' } } });
    const waiting = await say(threadId, 'Remember my trip');
    expect(waiting.status).toBe('interrupted');
    expect(waiting.reason).toContain('approval');
    expect((await server.request('GET', `/api/threads/${threadId}`)).body.status).toBe('interrupted');
    const [pending] = await approvalsOf(threadId);
    expect(pending).toMatchObject({ status: 'pending', tool: 'memory_write', arguments: { content: 'The trip is booked' }, attended: true, runId: waiting.id, agentId });
    expect(await memories(agentId)).toEqual([]);
    expect((await planOf(threadId)).toolCalls).toEqual([]);

    server = await server.restart();
    const listed = (await server.request('GET', '/api/approvals')).body.approvals as Json[];
    expect(listed.find((approval) => approval.id === pending!.id)).toMatchObject({ status: 'pending' });
    // Another user neither sees nor decides it (I12).
    expect((await server.request('POST', `/api/approvals/${pending!.id}/decision`, { body: { decision: 'approve' }, token: BOB.token })).status).toBe(404);
    const decided = await server.request('POST', `/api/approvals/${pending!.id}/decision`, { body: { decision: 'approve' } });
    expect(decided.status).toBe(200);
    expect(decided.body).toMatchObject({ status: 'approved', decidedBy: ALICE.id });

    const resumed = await resumedRun(threadId, waiting);
    expect(resumed).toMatchObject({ status: 'succeeded', trigger: 'user' });
    expect(await memories(agentId)).toEqual(['The trip is booked']);
    expect((await server.request('GET', `/api/approvals/${pending!.id}`)).body).toMatchObject({ status: 'approved', executed: true });
    const plan = await planOf(threadId);
    expect(plan.status).toBe('completed');
    expect(plan.toolCalls.map((call: Json) => [call.tool, call.status])).toEqual([['memory_write', 'succeeded']]);
    // The executor's answer was kept in the checkpoint: the model gave it once, before the wait.
    expect(model.callsOf('executor_step')).toHaveLength(1);
    expect((await server.request('GET', `/api/threads/${threadId}`)).body.status).toBe('idle');
    // A second, different decision loses (409).
    expect((await server.request('POST', `/api/approvals/${pending!.id}/decision`, { body: { decision: 'reject' } })).status).toBe(409);
  });

  it('I16: an edited planner call runs with exactly the edited arguments; a rejected one never runs and the plan goes on', async () => {
    model = writeScript('first draft');
    const edited = await plannerThread({ approval: { memory_write: { attended: 'ask' } } });
    const waiting = await say(edited.threadId, 'Remember my trip');
    const [request] = await approvalsOf(edited.threadId);
    const invalid = await server.request('POST', `/api/approvals/${request!.id}/decision`, { body: { decision: 'edit', arguments: { content: '   ' } } });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error.code).toBe('APPROVAL_ARGUMENTS_INVALID');
    expect((await server.request('POST', `/api/approvals/${request!.id}/decision`, { body: { decision: 'edit', arguments: { content: 'final draft' } } })).body.status).toBe('edited');
    expect(await resumedRun(edited.threadId, waiting)).toMatchObject({ status: 'succeeded' });
    expect(await memories(edited.agentId)).toEqual(['final draft']);

    model = writeScript('never this');
    const rejected = await plannerThread({ approval: { memory_write: { attended: 'ask' } } });
    const waitingToo = await say(rejected.threadId, 'Remember my trip');
    const [refused] = await approvalsOf(rejected.threadId);
    await server.request('POST', `/api/approvals/${refused!.id}/decision`, { body: { decision: 'reject', message: 'not now' } });
    expect(await resumedRun(rejected.threadId, waitingToo)).toMatchObject({ status: 'succeeded' });
    expect(await memories(rejected.agentId)).toEqual([]);
    const plan = await planOf(rejected.threadId);
    expect(plan.toolCalls).toHaveLength(1);
    expect(plan.toolCalls[0]).toMatchObject({ tool: 'memory_write', status: 'refused' });
    expect(plan.toolCalls[0].error).toContain('not now');
    // The critic read the refusal: it reached the model as the call's outcome.
    expect(offeredTo(model.callsOf('tactical_critique')[0]!)).toContain('not now');
  });

  it('I16, I11: a planner call that asks but whose arguments do not fit its tool is answered with the validation error; nobody is asked', async () => {
    model = writeScript('   ');
    const { agentId, threadId } = await plannerThread({ approval: { memory_write: { attended: 'ask' } } });
    const run = await say(threadId, 'Remember my trip');
    expect(run.status).toBe('succeeded');
    expect(await approvalsOf(threadId)).toEqual([]);
    expect(await memories(agentId)).toEqual([]);
    const plan = await planOf(threadId);
    expect(plan.toolCalls.map((call: Json) => [call.tool, call.status])).toEqual([['memory_write', 'failed']]);
    expect(plan.toolCalls[0].error).toContain('do not fit memory_write');
    expect(plan.toolCalls[0].error).toContain('nobody was asked');
    // The critic read the schema's complaint: it reached the model as the call's outcome.
    expect(offeredTo(model.callsOf('tactical_critique')[0]!)).toContain('do not fit memory_write');
  });

  it("I16: while a planner thread waits for a decision, the overlord's heartbeat starts no run and calls no model: it is put off", async () => {
    model = writeScript();
    // No idleness needed: only the waiting keeps the heartbeat from calling the model.
    const { agentId, threadId } = await plannerThread({ approval: { memory_write: { attended: 'ask' } } }, { overlord: { minIdleMs: 0 } });
    const waiting = await say(threadId, 'Remember my trip');
    expect(waiting.status).toBe('interrupted');
    const plans = (await server.request('GET', `/api/threads/${threadId}/plans`)).body.plans as Json[];
    const modelCalls = model.calls.length;
    await server.services.overlord.arm({ userId: ALICE.id, threadId, planId: plans[0]!.id as string, agentId, delayMs: 0 });
    await waitFor(() => server.logs.some((line) => String(line.msg).startsWith('overlord: a run is in progress or the thread waits for an approval') && line.threadId === threadId), waitLong, 'the heartbeat');
    expect(model.calls.length).toBe(modelCalls);
    expect((await runs(threadId)).map((run) => run.id)).toEqual([waiting.id]);
    const [pending] = await approvalsOf(threadId);
    await server.request('POST', `/api/approvals/${pending!.id}/decision`, { body: { decision: 'reject' } });
    expect(await resumedRun(threadId, waiting)).toMatchObject({ status: 'succeeded' });
    await server.services.overlord.disarm(threadId);
  });

  it('I16: while a planner step waits for a decision, resuming its plan is refused (409 THREAD_AWAITING_APPROVAL) and asks nobody again; the decision carries the step on', async () => {
    model = writeScript();
    const { agentId, threadId } = await plannerThread({ approval: { memory_write: { attended: 'ask' } } });
    const waiting = await say(threadId, 'Remember my trip');
    expect(waiting.status).toBe('interrupted');
    const plan = await planOf(threadId);
    // Another user learns nothing of the plan (I12).
    expect((await server.request('POST', `/api/plans/${plan.id}/resume`, { body: {}, token: BOB.token })).status).toBe(404);
    const resume = await server.request('POST', `/api/plans/${plan.id}/resume`, { body: {} });
    expect(resume.status, JSON.stringify(resume.body)).toBe(409);
    expect(resume.body.error.code).toBe('THREAD_AWAITING_APPROVAL');
    // Nothing started beside the waiting step, and its request is still the only one.
    expect((await runs(threadId)).map((run) => run.id)).toEqual([waiting.id]);
    const [pending, ...others] = await approvalsOf(threadId);
    expect(others).toEqual([]);
    const decided = await server.request('POST', `/api/approvals/${pending!.id}/decision`, { body: { decision: 'approve' } });
    expect(decided.status).toBe(200);
    expect(await resumedRun(threadId, waiting)).toMatchObject({ status: 'succeeded' });
    expect(await memories(agentId)).toEqual(['The trip is booked']);
  });

  it('I16: an unattended planner run (a scheduled task) follows the documented defaults: memory_write asks with no policy set; approved, it runs once', async () => {
    model = writeScript('Scheduled note');
    const { agentId, threadId } = await plannerThread({});
    const input = new HumanMessage({ content: 'Remember the trip', additional_kwargs: { synthetic: true, trigger_type: 'cron' } });
    const outcome = await server.services.conversations.runTriggered(ALICE.id, threadId, { trigger: 'cron', input });
    expect(outcome.run.status).toBe('interrupted');
    const [pending] = await approvalsOf(threadId);
    expect(pending).toMatchObject({ status: 'pending', tool: 'memory_write', attended: false, runId: outcome.run.id });
    await server.request('POST', `/api/approvals/${pending!.id}/decision`, { body: { decision: 'approve' } });
    const waiting = (await runs(threadId)).find((run) => run.id === outcome.run.id)!;
    expect(await resumedRun(threadId, waiting)).toMatchObject({ status: 'succeeded', trigger: 'cron' });
    expect(await memories(agentId)).toEqual(['Scheduled note']);
  });

  it('deny removes the tool from what the planner model is offered, for that kind of run only; a call to it finds no such tool', async () => {
    model = new ScriptedChatModel({
      knowledge_plan: [noKnowledge],
      strategic_plan: [strategicPlan('Tell the time', 'Look')],
      tactical_plan: [tacticalPlan(step('look at the clock', ['current_time']))],
      executor_step: [execute([{ tool: 'current_time' }, { tool: 'memory_write', args: { content: 'sneaky' } }], true, 'looked')],
      tactical_critique: always(approve()),
      strategic_critique: [approve()],
      text: ['It is now.'],
    });
    const { agentId, threadId } = await plannerThread({ approval: { memory_write: { attended: 'deny', unattended: 'allow' } } });
    const run = await say(threadId, 'What time is it?');
    expect(run.status).toBe('succeeded');
    for (const decision of ['knowledge_plan', 'tactical_plan', 'executor_step']) {
      const prompt = offeredTo(model.callsOf(decision)[0]!);
      expect(prompt, decision).toContain('current_time');
      expect(prompt, decision).not.toContain('memory_write');
    }
    expect(await memories(agentId)).toEqual([]);
    const plan = await planOf(threadId);
    expect(plan.toolCalls.map((call: Json) => [call.tool, call.status])).toEqual([
      ['current_time', 'succeeded'],
      ['memory_write', 'failed'],
    ]);
    expect(plan.toolCalls[1].error).toContain('no tool named "memory_write"');
    expect(await approvalsOf(threadId)).toEqual([]);
    // The agent's tool list (not a run) still names every tool: deny is a policy of runs.
    expect((await server.request('GET', `/api/agents/${agentId}/tools`)).body.tools.map((tool: Json) => tool.name)).toContain('memory_write');
  });
}
