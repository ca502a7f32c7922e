import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_FOLLOW_UP_SECONDS, DEMO_PLANNER_ID } from '../../src/app/agent-service.js';
import { ALICE, startTestServer, type TestServer } from '../helpers/test-server.js';

/** What a newcomer gets from `npm start` with no model configured: an agent that follows up soon. */
describe('the demo default agent', () => {
  let demo: TestServer;
  let plain: TestServer;

  beforeAll(async () => {
    demo = await startTestServer({ kind: 'sqlite' }, { demoAgent: true });
    plain = await startTestServer({ kind: 'sqlite' });
  });
  afterAll(async () => {
    await demo?.destroy();
    await plain?.destroy();
  });

  it('follows up after a short, labelled delay: a demo reply asks a question, so a follow-up is pending', async () => {
    const thread = await demo.request('POST', '/api/threads', { body: {} });
    expect(thread.status).toBe(201);
    const agent = await demo.request('GET', `/api/agents/${thread.body.agentId}`);
    expect(agent.body.name).toBe(`Demo agent (follows up after ${DEMO_FOLLOW_UP_SECONDS} s)`);
    const policy = (await demo.request('GET', `/api/agents/${thread.body.agentId}/autonomy`)).body.policy;
    expect(policy).toMatchObject({ enabled: true, delaysMs: { question_unanswered: DEMO_FOLLOW_UP_SECONDS * 1000 } });

    const sent = await demo.request('POST', `/api/threads/${thread.body.id}/messages`, { body: { content: 'hello' } });
    expect(sent.status).toBe(200);
    const pending = (await demo.request('GET', `/api/threads/${thread.body.id}/timers`)).body.timers;
    expect(pending).toHaveLength(1);
    expect(pending[0]).toMatchObject({ triggerType: 'question_unanswered', state: 'pending' });
    const dueInMs = Date.parse(pending[0].dueAt) - Date.parse(sent.body.run.endedAt);
    expect(dueInMs).toBeGreaterThan(0);
    expect(dueInMs).toBeLessThanOrEqual(DEMO_FOLLOW_UP_SECONDS * 1000 + 1000);
  });

  it('a planner agent on the demo model runs a whole plan: two milestones, a real tool call each, critic verdicts, a closing reply with a question', async () => {
    // Made beside the demo agent, on the server's (demo) model.
    const planner = await demo.request('GET', `/api/agents/${DEMO_PLANNER_ID}`);
    expect(planner.body).toMatchObject({ name: 'Demo planner (runs a short scripted plan)', kind: 'planner', model: null });
    const thread = await demo.request('POST', '/api/threads', { body: { agentId: DEMO_PLANNER_ID } });
    const sent = await demo.request('POST', `/api/threads/${thread.body.id}/messages`, { body: { content: 'Plan my Saturday' } });
    expect(sent.status).toBe(200);
    expect(sent.body.run.status).toBe('succeeded');
    expect(sent.body.messages.at(-1).content).toMatch(/^\[demo model\] I worked through a plan for: Answer "Plan my Saturday".*Completed 2 of 2 milestones.*\?$/);
    const plans = (await demo.request('GET', `/api/threads/${thread.body.id}/plans`)).body.plans;
    expect(plans).toHaveLength(1);
    const plan = (await demo.request('GET', `/api/plans/${plans[0].id}`)).body;
    expect(plan.status).toBe('completed');
    expect(plan.milestones.map((milestone: Record<string, unknown>) => [milestone.title, milestone.status, milestone.criticDecision])).toEqual([
      ['Check the clock', 'completed', 'approve'],
      ['Note the request', 'completed', 'approve'],
    ]);
    expect(plan.toolCalls.map((call: Record<string, unknown>) => [call.tool, call.status])).toEqual([
      ['current_time', 'succeeded'],
      ['memory_write', 'succeeded'],
    ]);
    // The tool really ran: the memory is there.
    const memories = (await demo.request('GET', '/api/agents/demo-planner/memories')).body.memories;
    expect(memories.map((memory: Record<string, unknown>) => memory.content)).toEqual(['Planned with the demo model: Answer "Plan my Saturday" (a demo plan)']);
    // Nothing of the planner's JSON reached the person's history.
    const history = (await demo.request('GET', `/api/threads/${thread.body.id}/history`)).body.messages;
    expect(history.map((message: Record<string, unknown>) => message.role)).toEqual(['user', 'assistant']);
  });

  it('is off unless asked for: a server started without demoAgent keeps the plain default agent', async () => {
    const thread = await plain.request('POST', '/api/threads', { token: ALICE.token, body: {} });
    const agent = await plain.request('GET', `/api/agents/${thread.body.agentId}`);
    expect(agent.body.name).toBe('Default agent');
    expect((await plain.request('GET', `/api/agents/${thread.body.agentId}/autonomy`)).body.policy.enabled).toBe(false);
    expect((await plain.request('GET', `/api/agents/${DEMO_PLANNER_ID}`)).status).toBe(404);
  });
});
