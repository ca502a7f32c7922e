import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_FOLLOW_UP_SECONDS } from '../../src/app/agent-service.js';
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

  it('is off unless asked for: a server started without demoAgent keeps the plain default agent', async () => {
    const thread = await plain.request('POST', '/api/threads', { token: ALICE.token, body: {} });
    const agent = await plain.request('GET', `/api/agents/${thread.body.agentId}`);
    expect(agent.body.name).toBe('Default agent');
    expect((await plain.request('GET', `/api/agents/${thread.body.agentId}/autonomy`)).body.policy.enabled).toBe(false);
  });
});
