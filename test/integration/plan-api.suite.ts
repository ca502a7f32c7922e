import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { PlanTables } from '../../src/adapters/sql/plan-repository.js';
import type { SqlStorage } from '../../src/adapters/sql/sql-storage.js';
import { ALICE, BOB, parseSse, startTestServer, type Backend, type TestServer } from '../helpers/test-server.js';
import { approve, execute, noKnowledge, revise, step, strategicPlan, tacticalPlan } from '../helpers/planner-scripts.js';
import { always, ScriptedChatModel } from '../helpers/scripted-model.js';

/** Planner agents through the HTTP API: settings, tools, plans, progress events, resume across a restart (I10, I12). */
export function planApiSuite(backend: () => Backend): void {
  let server: TestServer;
  let model = new ScriptedChatModel();

  beforeAll(async () => {
    server = await startTestServer(backend(), { models: () => model });
  });
  afterAll(async () => {
    await server?.destroy();
  });

  async function plannerAgent(id: string, settings?: Record<string, unknown>) {
    const created = await server.request('POST', '/api/agents', { body: { id, name: 'Planner', kind: 'planner', systemPrompt: 'You plan.' } });
    expect(created.status).toBe(201);
    if (settings) expect((await server.request('PUT', `/api/agents/${id}/planner`, { body: settings })).status).toBe(200);
    const thread = await server.request('POST', '/api/threads', { body: { agentId: id } });
    return thread.body as { id: string };
  }

  const fullScript = () =>
    new ScriptedChatModel({
      knowledge_plan: [noKnowledge],
      strategic_plan: [strategicPlan('Organise the trip', 'Book', 'Pack')],
      tactical_plan: [tacticalPlan(step('book it', ['current_time'])), tacticalPlan(step('pack it', ['memory_write']))],
      executor_step: [execute([{ tool: 'current_time' }], true, 'booked'), execute([{ tool: 'memory_write', args: { content: 'Trip is packed' } }], true, 'packed')],
      tactical_critique: always(approve()),
      strategic_critique: [approve()],
      text: ['The trip is organised.'],
    });

  it('planner settings are validated, stored per agent and read back with defaults', async () => {
    await plannerAgent('settings-planner');
    const defaults = await server.request('GET', '/api/agents/settings-planner/planner');
    expect(defaults.status).toBe(200);
    expect(defaults.body.budgets).toMatchObject({ maxSteps: 80, maxRevisions: 3, maxSameNodeLoops: 15, maxCycleRepeats: 3, maxIdenticalToolCalls: 3 });
    const put = await server.request('PUT', '/api/agents/settings-planner/planner', { body: { budgets: { maxToolCalls: 5 }, fetch: { allowedHosts: ['example.com'] } } });
    expect(put.status).toBe(200);
    expect(put.body.budgets).toMatchObject({ maxToolCalls: 5, maxSteps: 80 });
    const bad = await server.request('PUT', '/api/agents/settings-planner/planner', { body: { budgets: { maxSteps: 'lots' }, surprise: true } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('VALIDATION_FAILED');
    const tools = await server.request('GET', '/api/agents/settings-planner/tools');
    expect(tools.body.tools.map((tool: { name: string }) => tool.name)).toEqual(['memory_search', 'memory_write', 'current_time', 'http_fetch']);
    expect((await server.request('GET', '/api/agents/settings-planner/planner', { token: BOB.token })).status).toBe(404);
    expect((await server.request('PUT', '/api/agents/settings-planner/planner', { token: BOB.token, body: {} })).status).toBe(404);
  });

  it('an MCP header fetch could never send (a pasted "…", a bad name) is refused with 400 on every write path, and nothing is stored', async () => {
    await plannerAgent('header-planner');
    const mcpHttp = (headers: Record<string, string>) => ({ search: { transport: 'http', url: 'https://mcp.example.com/mcp', headers } });
    const before = await server.request('GET', '/api/agents/header-planner/planner');
    const planner = await server.request('PUT', '/api/agents/header-planner/planner', { body: { mcpServers: mcpHttp({ authorization: 'Bearer …' }) } });
    expect(planner.status).toBe(400);
    expect(planner.body.error.code).toBe('VALIDATION_FAILED');
    expect(planner.body.error.details).toEqual([expect.objectContaining({ path: '/mcpServers/search/headers/authorization' })]);
    expect((await server.request('GET', '/api/agents/header-planner/planner')).body).toEqual(before.body);
    const badName = await server.request('PUT', '/api/agents/header-planner/planner', { body: { mcpServers: mcpHttp({ 'bad header': 'x' }) } });
    expect(badName.status).toBe(400);
    const patch = await server.request('PATCH', '/api/agents/header-planner', { body: { tools: { mcpServers: mcpHttp({ authorization: 'Bearer \n x' }) } } });
    expect(patch.status).toBe(400);
    expect(patch.body.error.details).toEqual([expect.objectContaining({ path: '/tools/mcpServers/search/headers/authorization' })]);
    const create = await server.request('POST', '/api/agents', { body: { id: 'header-chat', name: 'Chat', tools: { mcpServers: mcpHttp({ authorization: 'Bearer …' }) } } });
    expect(create.status).toBe(400);
    expect((await server.request('GET', '/api/agents/header-chat')).status).toBe(404);
    // Latin-1 and ordinary tokens stay accepted.
    const fine = await server.request('PUT', '/api/agents/header-planner/planner', { body: { mcpServers: mcpHttp({ authorization: 'Bearer abc.def-123', 'x-note': 'café' }) } });
    expect(fine.status).toBe(200);
  });

  it('a plan runs from a message, streams its progress events, and is readable by its owner only (I12)', async () => {
    model = fullScript();
    const thread = await plannerAgent('trip-planner');
    const response = await fetch(`${server.url}/api/threads/${thread.id}/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ALICE.token}`, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ content: 'Organise my trip' }),
    });
    const events = parseSse(await response.text());
    const types = events.map((event) => event.event).filter((type) => type !== 'message.delta');
    expect(types).toEqual([
      'run.start',
      'message.end',
      'plan.create',
      'step.start',
      'step.end',
      'critic.decide',
      'step.start',
      'step.end',
      'critic.decide',
      'critic.decide',
      'plan.complete',
      'message.end',
      'run.end',
    ]);
    const planId = events.find((event) => event.event === 'plan.create')!.data.planId as string;
    expect(events.find((event) => event.event === 'plan.create')!.data).toMatchObject({ goal: 'Organise the trip', milestones: [{ title: 'Book' }, { title: 'Pack' }] });

    const list = await server.request('GET', `/api/threads/${thread.id}/plans`);
    expect(list.status).toBe(200);
    expect(list.body.plans.map((plan: { id: string; status: string }) => [plan.id, plan.status])).toEqual([[planId, 'completed']]);
    const detail = await server.request('GET', `/api/plans/${planId}`);
    expect(detail.status).toBe(200);
    expect(detail.body).toMatchObject({ id: planId, threadId: thread.id, status: 'completed', goal: 'Organise the trip', request: 'Organise my trip' });
    expect(detail.body.milestones.map((milestone: { title: string; status: string; steps: unknown[] }) => [milestone.title, milestone.status, milestone.steps.length])).toEqual([
      ['Book', 'completed', 1],
      ['Pack', 'completed', 1],
    ]);
    expect(detail.body.toolCalls.map((call: { seq: number; tool: string; status: string }) => [call.seq, call.tool, call.status])).toEqual([
      [1, 'current_time', 'succeeded'],
      [2, 'memory_write', 'succeeded'],
    ]);

    // I2: the person sees their message and the final reply only.
    const history = await server.request('GET', `/api/threads/${thread.id}/history?include=internal`);
    expect(history.body.messages.map((message: { role: string; content: string }) => [message.role, message.content])).toEqual([
      ['user', 'Organise my trip'],
      ['assistant', 'The trip is organised.'],
    ]);

    // I12: another user's ids answer 404.
    for (const [method, path] of [
      ['GET', `/api/plans/${planId}`],
      ['POST', `/api/plans/${planId}/resume`],
      ['GET', `/api/threads/${thread.id}/plans`],
      ['GET', '/api/agents/trip-planner/tools'],
    ] as const) {
      const response = await server.request(method, path, { token: BOB.token });
      expect(response.status).toBe(404);
      expect(response.body.error.code).toMatch(/^(PLAN|THREAD|AGENT)_NOT_FOUND$/);
    }
    expect((await server.request('GET', '/api/plans/no-such-plan')).body.error.code).toBe('PLAN_NOT_FOUND');
    // A completed plan cannot be resumed.
    const again = await server.request('POST', `/api/plans/${planId}/resume`);
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('PLAN_NOT_RESUMABLE');
  });

  it('I10: a plan stopped by its budget survives a server restart and resumes from the stored plan', async () => {
    model = new ScriptedChatModel({
      knowledge_plan: [noKnowledge],
      strategic_plan: [strategicPlan('Renovate', 'Walls', 'Floor', 'Lights')],
      tactical_plan: [tacticalPlan(step('paint the walls', ['current_time']))],
      executor_step: [execute([{ tool: 'current_time' }], true, 'walls painted')],
      tactical_critique: [approve()],
    });
    const thread = await plannerAgent('renovator', { budgets: { maxSteps: 6 } });
    const first = await server.request('POST', `/api/threads/${thread.id}/messages`, { body: { content: 'Renovate the flat' } });
    expect(first.status).toBe(200);
    expect(first.body.run).toMatchObject({ status: 'succeeded', reason: 'step budget spent: 6 graph steps this run (limit 6)' });
    expect(first.body.messages.at(-1).content).toContain('step budget spent');
    const planId = (await server.request('GET', `/api/threads/${thread.id}/plans`)).body.plans[0].id as string;
    const stopped = await server.request('GET', `/api/plans/${planId}`);
    expect(stopped.body).toMatchObject({ status: 'stopped', reason: 'step budget spent: 6 graph steps this run (limit 6)' });
    expect(stopped.body.milestones.map((milestone: { status: string }) => milestone.status)).toEqual(['completed', 'active', 'pending']);

    // A new server on the same database; fresh budgets for the resume.
    const resumedModel = new ScriptedChatModel({
      tactical_plan: [tacticalPlan(step('lay the floor')), tacticalPlan(step('hang the lights'))],
      executor_step: always(execute([], true, 'done')),
      tactical_critique: always(approve()),
      strategic_critique: [approve()],
      text: ['The flat is renovated.'],
    });
    model = resumedModel;
    server = await server.restart();
    expect((await server.request('PUT', '/api/agents/renovator/planner', { body: {} })).status).toBe(200);
    const resumed = await server.request('POST', `/api/plans/${planId}/resume`);
    expect(resumed.status).toBe(200);
    expect(resumed.body.run).toMatchObject({ status: 'succeeded', reason: null, trigger: 'user' });
    expect(resumed.body.messages.map((message: { content: string }) => message.content)).toEqual(['The flat is renovated.']);
    const done = await server.request('GET', `/api/plans/${planId}`);
    expect(done.body.status).toBe('completed');
    expect(done.body.milestones.map((milestone: { status: string }) => milestone.status)).toEqual(['completed', 'completed', 'completed']);
    // The walls were not painted twice: one tool call, from the first run; two milestones planned after the restart.
    expect(done.body.toolCalls).toHaveLength(1);
    expect(done.body.toolCalls[0].runId).toBe(first.body.run.id);
    expect(resumedModel.callsOf('tactical_plan')).toHaveLength(2);
    expect(resumedModel.callsOf('strategic_plan')).toHaveLength(0);
    const runs = await server.request('GET', `/api/threads/${thread.id}/runs`);
    expect(runs.body.runs.map((run: { status: string; reason: string | null }) => [run.status, run.reason])).toEqual([
      ['succeeded', null],
      ['succeeded', 'step budget spent: 6 graph steps this run (limit 6)'],
    ]);
    const history = await server.request('GET', `/api/threads/${thread.id}/history`);
    expect(history.body.messages.map((message: { role: string }) => message.role)).toEqual(['user', 'assistant', 'assistant']);
  });

  it('I9: a plan whose critic never approved is served as `stopped` with the revision-cap reason, in the plan, the run and the events', async () => {
    model = new ScriptedChatModel({
      knowledge_plan: [noKnowledge],
      strategic_plan: [strategicPlan('Perfect the essay', 'Draft')],
      tactical_plan: always(tacticalPlan(step('write'))),
      executor_step: always(execute([], true, 'written')),
      tactical_critique: always(revise('not good enough')),
    });
    const thread = await plannerAgent('perfectionist', { budgets: { maxRevisions: 1 } });
    const response = await fetch(`${server.url}/api/threads/${thread.id}/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ALICE.token}`, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ content: 'Write the perfect essay' }),
    });
    const events = parseSse(await response.text());
    const reason = 'revision cap reached: the tactical critic still asked for a revision after 1 (limit 1): not good enough';
    expect(events.find((event) => event.event === 'plan.complete')?.data).toMatchObject({ status: 'stopped', reason });
    expect(events.at(-1)).toMatchObject({ event: 'run.end', data: { reason } });
    const planId = events.find((event) => event.event === 'plan.create')!.data.planId as string;
    const detail = await server.request('GET', `/api/plans/${planId}`);
    expect(detail.body).toMatchObject({ status: 'stopped', reason });
    const list = await server.request('GET', `/api/threads/${thread.id}/plans`);
    expect(list.body.plans.map((plan: { status: string }) => plan.status)).toEqual(['stopped']);
    const runs = await server.request('GET', `/api/threads/${thread.id}/runs`);
    expect(runs.body.runs[0]).toMatchObject({ reason });
  });

  it("plan detail shows the latest 500 tool calls, oldest first, and a cursor pages back to the first; another user's plan is not found, cursor or not (I11, I12)", async () => {
    model = fullScript();
    const thread = await plannerAgent('busy-planner');
    expect((await server.request('POST', `/api/threads/${thread.id}/messages`, { body: { content: 'Organise my trip' } })).status).toBe(200);
    const planId = (await server.request('GET', `/api/threads/${thread.id}/plans`)).body.plans[0].id as string;
    // As if resumed many times: 1,203 more tool calls after the run's two (seq 3 to 1205), each resume a run of its own.
    const db = (server.storage as SqlStorage).context.db.withTables<PlanTables>();
    const calls = Array.from({ length: 1203 }, (_, index) => {
      const seq = index + 3;
      const at = new Date(Date.UTC(2026, 0, 1, 0, 0, seq)).toISOString();
      return { id: randomUUID(), plan_id: planId, run_id: `resume-${Math.floor(seq / 50)}`, milestone_id: null, step_index: null, seq, tool: 'current_time', args: '{}', status: 'succeeded', output: `call ${seq}`, error: null, started_at: at, ended_at: at };
    });
    for (let start = 0; start < calls.length; start += 100) await db.insertInto('plan_tool_calls').values(calls.slice(start, start + 100)).execute();
    const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, index) => from + index);
    const seqs = (body: { toolCalls: Array<{ seq: number }> }) => body.toolCalls.map((call) => call.seq);

    const latest = await server.request('GET', `/api/plans/${planId}`);
    expect(latest.status).toBe(200);
    expect(seqs(latest.body)).toEqual(range(706, 1205));
    expect(latest.body.toolCalls.at(-1)).toMatchObject({ seq: 1205, tool: 'current_time', output: 'call 1205' });
    expect(latest.body).toMatchObject({ id: planId, status: 'completed', toolCallsNextCursor: expect.any(String) });
    const older = await server.request('GET', `/api/plans/${planId}?toolCallsCursor=${latest.body.toolCallsNextCursor}`);
    expect(seqs(older.body)).toEqual(range(206, 705));
    const oldest = await server.request('GET', `/api/plans/${planId}?toolCallsCursor=${older.body.toolCallsNextCursor}`);
    expect(seqs(oldest.body)).toEqual(range(1, 205));
    expect(oldest.body.toolCalls.slice(0, 2).map((call: { tool: string }) => call.tool)).toEqual(['current_time', 'memory_write']);
    expect(oldest.body.toolCallsNextCursor).toBeNull();
    const few = await server.request('GET', `/api/plans/${planId}?toolCallsLimit=2`);
    expect([seqs(few.body), typeof few.body.toolCallsNextCursor]).toEqual([[1204, 1205], 'string']);

    // I11: a cursor vigil did not give (a history cursor included) and a limit out of range are refused.
    const historyCursor = Buffer.from(JSON.stringify({ s: 10 })).toString('base64url');
    for (const query of ['toolCallsCursor=garbage!', `toolCallsCursor=${historyCursor}`, 'toolCallsLimit=501', 'toolCallsLimit=0', 'limit=5']) {
      const refused = await server.request('GET', `/api/plans/${planId}?${query}`);
      expect([refused.status, refused.body.error.code], query).toEqual([400, 'VALIDATION_FAILED']);
    }
    // I12: Bob gets what a plan nobody has gets, with or without Alice's cursor.
    const nobodys = await server.request('GET', `/api/plans/no-such-plan?toolCallsCursor=${latest.body.toolCallsNextCursor}`, { token: BOB.token });
    for (const query of ['', `?toolCallsCursor=${latest.body.toolCallsNextCursor}`, '?toolCallsLimit=1']) {
      const bobs = await server.request('GET', `/api/plans/${planId}${query}`, { token: BOB.token });
      expect([bobs.status, bobs.body.error.code, bobs.body.error.message.replace(planId, 'no-such-plan')]).toEqual([404, 'PLAN_NOT_FOUND', nobodys.body.error.message]);
    }
  });

  it('lists the plan routes in the OpenAPI document', async () => {
    const document = await server.request('GET', '/api/openapi.json', { token: '' });
    for (const path of ['/api/threads/{threadId}/plans', '/api/plans/{planId}', '/api/plans/{planId}/resume', '/api/agents/{agentId}/tools', '/api/agents/{agentId}/planner']) {
      expect(document.body.paths).toHaveProperty([path]);
    }
  });
}
