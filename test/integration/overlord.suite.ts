import { afterAll, beforeAll, expect, it } from 'vitest';
import { openJobQueue } from '../../src/adapters/jobs/job-queue-factory.js';
import { pgBossSchemaFor } from '../../src/adapters/jobs/pg-boss-job-queue.js';
import { ContextWindow } from '../../src/agent/context/context-window.js';
import { TokenCounter } from '../../src/agent/context/token-counter.js';
import { OVERLORD_QUEUE, Overlord } from '../../src/agent/planner/overlord.js';
import type { JobQueue } from '../../src/app/job-queue.js';
import type { PlanHeartbeats } from '../../src/app/plans/plan-ports.js';
import { textOf } from '../../src/domain/message-content.js';
import { captureLogs } from '../helpers/log-capture.js';
import { InMemoryJobQueue } from '../helpers/overlord-job-queue.js';
import { openPlannerHarness, USER, type PlannerHarness } from '../helpers/planner-harness.js';
import { approve, execute, noKnowledge, step, strategicPlan, tacticalPlan } from '../helpers/planner-scripts.js';
import { dropSchema } from '../helpers/postgres.js';
import { always, ScriptedChatModel } from '../helpers/scripted-model.js';
import type { Backend } from '../helpers/test-server.js';

const MINUTE = 60_000;

/**
 * The overlord over the JobQueue port: per-thread heartbeats (queue `overlord`, key =
 * thread id), a deterministic check before any model call, and typed plan | wait | end
 * decisions. Time is the test's: a settable clock and an in-memory queue that delivers
 * what is due when told to.
 */
export function overlordSuite(backend: () => Backend): void {
  let harness: PlannerHarness;
  let model = new ScriptedChatModel();
  let now = Date.parse('2030-01-01T09:00:00.000Z');
  const clock = { now: () => new Date(now) };
  const queue = new InMemoryJobQueue();
  let overlord: Overlord;

  beforeAll(async () => {
    const heartbeats: PlanHeartbeats = { arm: (input) => overlord.arm(input), disarm: (threadId) => overlord.disarm(threadId) };
    harness = await openPlannerHarness(backend(), { model: () => model, heartbeats, clock });
    overlord = overlordOver(harness, queue, () => model, clock);
    await overlord.start();
    await queue.start();
  });
  afterAll(async () => {
    await queue.stop();
    await harness?.destroy();
  });

  /** A plan stopped by its step budget after its first milestone: work is pending. */
  async function stoppedPlan(overlordSettings: Record<string, unknown> = {}) {
    model = new ScriptedChatModel({
      knowledge_plan: [noKnowledge],
      strategic_plan: [strategicPlan('Write the report', 'Outline', 'Draft')],
      tactical_plan: [tacticalPlan(step('outline it'))],
      executor_step: [execute([], true, 'outlined')],
      tactical_critique: [approve()],
    });
    const agent = await harness.agent({ budgets: { maxSteps: 6 }, overlord: overlordSettings });
    const thread = await harness.thread(agent);
    const outcome = await harness.say(thread, 'Write the report');
    expect(outcome.run.reason).toMatch(/^step budget spent/);
    const plan = (await harness.plans.listByThread(USER, thread.id, { limit: 1 }))[0]!;
    expect(plan.status).toBe('stopped');
    // Later runs of this agent get the default budgets again.
    await harness.storage.agents.updateSetting(USER, agent.id, 'planner', { overlord: overlordSettings }, clock.now().toISOString());
    return { agent, thread, plan };
  }

  async function wakeAt(threadId: string, at: number) {
    now = at;
    const delivered = await queue.deliverDue(new Date(now), { key: threadId });
    expect(delivered.map((job) => job.key)).toContain(threadId);
  }

  it('a stopped plan arms one heartbeat for its thread: queue "overlord", key = thread id', async () => {
    const { thread, plan } = await stoppedPlan();
    const job = queue.pendingJob(OVERLORD_QUEUE, thread.id);
    expect(job).toMatchObject({ queue: 'overlord', key: thread.id, payload: { threadId: thread.id, planId: plan.id, userId: USER } });
    expect(Date.parse(job!.dueAt) - now).toBe(15 * MINUTE);
    expect((await harness.plans.get(USER, plan.id))?.heartbeat).toMatchObject({ status: 'armed', wakes: 0, nextCheckAt: job!.dueAt });
  });

  it('no model call when nothing is pending: a completed plan, or no plan at all', async () => {
    model = new ScriptedChatModel({
      knowledge_plan: [noKnowledge],
      strategic_plan: [strategicPlan('Quick', 'One')],
      tactical_plan: [tacticalPlan(step('do it'))],
      executor_step: [execute([])],
      tactical_critique: [approve()],
      strategic_critique: [approve()],
      text: ['Done.'],
    });
    const agent = await harness.agent();
    const thread = await harness.thread(agent);
    await harness.say(thread, 'Do something quick');
    const plan = (await harness.plans.listByThread(USER, thread.id, { limit: 1 }))[0]!;
    expect(plan.status).toBe('completed');
    const overlordModel = new ScriptedChatModel(); // any call would throw: none is expected
    model = overlordModel;
    await overlord.arm({ userId: USER, threadId: thread.id, planId: plan.id, agentId: agent.id, delayMs: MINUTE });
    await wakeAt(thread.id, now + 2 * MINUTE);
    expect(overlordModel.calls).toHaveLength(0);
    expect(queue.pendingJob(OVERLORD_QUEUE, thread.id)).toBeUndefined();

    const empty = await harness.thread(agent);
    expect(await overlord.wake({ userId: USER, threadId: empty.id, planId: 'no-such-plan', agentId: agent.id })).toEqual({ outcome: 'nothing_pending', modelCalled: false });
    expect(await overlord.wake({ threadId: empty.id })).toEqual({ outcome: 'invalid', modelCalled: false });
    expect(overlordModel.calls).toHaveLength(0);
  });

  it('no model call while the thread is not idle: the check is put off to the end of the idle window', async () => {
    const stoppedAt = now;
    const { thread } = await stoppedPlan({ minIdleMs: 30 * MINUTE });
    const overlordModel = new ScriptedChatModel();
    model = overlordModel;
    await wakeAt(thread.id, now + 15 * MINUTE); // the first check: idle for 15 minutes only
    expect(overlordModel.calls).toHaveLength(0);
    expect(queue.pendingJob(OVERLORD_QUEUE, thread.id)?.dueAt).toBe(new Date(stoppedAt + 30 * MINUTE).toISOString());
  });

  it('`wait` schedules the next check at next_check_at, clamped to the allowed delays', async () => {
    const { thread, plan } = await stoppedPlan();
    const farFuture = new Date(now + 90 * 86_400_000).toISOString();
    model = new ScriptedChatModel({ overlord_decision: [{ decision: 'wait', reason: 'the person is away', next_check_at: farFuture }] });
    const decisionModel = model as ScriptedChatModel;
    const wokeAt = now + 16 * MINUTE;
    await wakeAt(thread.id, wokeAt);
    const call = decisionModel.callsOf('overlord_decision')[0]!;
    const context = JSON.parse(String(call.messages.at(-1)!.content)) as { heartbeatContext: { idleTime: number; lastActivity: string; priority: string } };
    expect(context.heartbeatContext).toEqual({ idleTime: 16 * MINUTE, lastActivity: expect.any(String), priority: 'high' });
    const next = queue.pendingJob(OVERLORD_QUEUE, thread.id)!;
    expect(next.dueAt).toBe(new Date(wokeAt + 86_400_000).toISOString()); // maxDelayMs: one day
    expect((await harness.plans.get(USER, plan.id))?.heartbeat).toMatchObject({ status: 'armed', wakes: 1, lastDecision: 'wait', lastReason: 'the person is away', nextCheckAt: next.dueAt });

    model = new ScriptedChatModel({ overlord_decision: [{ decision: 'wait', reason: 'soon', next_check_at: new Date(0).toISOString() }] });
    await wakeAt(thread.id, Date.parse(next.dueAt));
    expect(queue.pendingJob(OVERLORD_QUEUE, thread.id)!.dueAt).toBe(new Date(now + MINUTE).toISOString()); // minDelayMs: one minute
  });

  it('`end` stops the heartbeats: no job left, and no model call on a stray wake', async () => {
    const { agent, thread, plan } = await stoppedPlan();
    model = new ScriptedChatModel({ overlord_decision: [{ decision: 'end', reason: 'the person must decide first', next_check_at: null }] });
    await wakeAt(thread.id, now + 20 * MINUTE);
    expect(queue.pendingJob(OVERLORD_QUEUE, thread.id)).toBeUndefined();
    expect((await harness.plans.get(USER, plan.id))?.heartbeat).toMatchObject({ status: 'ended', lastDecision: 'end', lastReason: 'the person must decide first', nextCheckAt: null });
    const overlordModel = new ScriptedChatModel();
    model = overlordModel;
    expect(await overlord.wake({ userId: USER, threadId: thread.id, planId: plan.id, agentId: agent.id })).toEqual({ outcome: 'nothing_pending', modelCalled: false });
    expect(overlordModel.calls).toHaveLength(0);
  });

  it('`plan` starts a heartbeat run that resumes the stored plan; its input is internal, its reply visible', async () => {
    const { thread, plan } = await stoppedPlan();
    model = new ScriptedChatModel({
      overlord_decision: [{ decision: 'plan', reason: 'idle long enough; the draft is next', next_check_at: null }],
      tactical_plan: [tacticalPlan(step('draft it'))],
      executor_step: [execute([], true, 'drafted')],
      tactical_critique: [approve()],
      strategic_critique: [approve()],
      text: ['The report is drafted.'],
    });
    const planner = model as ScriptedChatModel;
    await wakeAt(thread.id, now + 20 * MINUTE);
    expect(planner.callsOf('knowledge_plan')).toHaveLength(0); // resumed, not planned again
    expect(planner.callsOf('tactical_plan')).toHaveLength(1);
    const runs = await harness.storage.runs.listByThread(USER, thread.id, { limit: 5 });
    expect(runs[0]).toMatchObject({ trigger: 'heartbeat', status: 'succeeded', meta: { plan_id: plan.id, idle_ms: 20 * MINUTE, priority: 'high' } });
    const done = await harness.plans.get(USER, plan.id);
    expect(done?.status).toBe('completed');
    expect(done?.heartbeat).toMatchObject({ status: 'ended', wakes: 1, lastDecision: 'plan' });
    expect(queue.pendingJob(OVERLORD_QUEUE, thread.id)).toBeUndefined();
    const all = await harness.storage.threads.history(USER, thread.id, { visibility: 'all', limit: 20 });
    const heartbeatInput = all.messages.find((message) => message.additionalKwargs.trigger_type === 'heartbeat');
    expect(heartbeatInput).toMatchObject({ type: 'human', visibility: 'internal' });
    expect(heartbeatInput?.additionalKwargs).toMatchObject({ synthetic: true, planner: { action: 'resume', planId: plan.id } });
    const visible = await harness.storage.threads.history(USER, thread.id, { visibility: 'user', limit: 20 });
    expect(visible.messages.map((message) => message.content).at(-1)).toBe('The report is drafted.');
    const state = await harness.state(thread.id);
    expect(state.planner).toMatchObject({ overlordDecision: 'plan', heartbeatContext: { idleTime: 20 * MINUTE, priority: 'high' } });
  });

  it('each plan has a wake budget: past it the heartbeats end without a model call', async () => {
    const { agent, thread, plan } = await stoppedPlan({ maxWakes: 1 });
    model = new ScriptedChatModel({ overlord_decision: [{ decision: 'wait', reason: 'later', next_check_at: null }] });
    await wakeAt(thread.id, now + 20 * MINUTE);
    const overlordModel = new ScriptedChatModel();
    model = overlordModel;
    expect(await overlord.wake({ userId: USER, threadId: thread.id, planId: plan.id, agentId: agent.id })).toEqual({ outcome: 'max_wakes', modelCalled: false });
    expect(overlordModel.calls).toHaveLength(0);
    expect((await harness.plans.get(USER, plan.id))?.heartbeat).toMatchObject({ status: 'ended', lastReason: 'max wakes reached (1)' });
  });

  it('a malformed decision counts as wait, within the wake budget', async () => {
    const { thread, plan } = await stoppedPlan();
    model = new ScriptedChatModel({ overlord_decision: always('let me think about it') });
    await wakeAt(thread.id, now + 20 * MINUTE);
    expect((model as ScriptedChatModel).callsOf('overlord_decision')).toHaveLength(2); // one retry
    expect((await harness.plans.get(USER, plan.id))?.heartbeat).toMatchObject({ status: 'armed', lastDecision: 'wait', lastReason: expect.stringMatching(/^no valid decision/) });
    expect(queue.pendingJob(OVERLORD_QUEUE, thread.id)?.dueAt).toBe(new Date(now + 15 * MINUTE).toISOString());
  });

  it("I14: the overlord's retry after an answer that does not fit the schema stays within the context budget", async () => {
    // A plan whose goal and remaining milestones fill the decision's context past a small budget.
    const long = (text: string, chars: number) => text.repeat(Math.ceil(chars / text.length)).slice(0, chars);
    const titles = Array.from({ length: 8 }, (_, index) => long(`Chapter ${index + 1}: check the figures, the sources and the wording; `, 200));
    model = new ScriptedChatModel({
      knowledge_plan: [noKnowledge],
      strategic_plan: [strategicPlan(long('Write the yearly report on the garden, bed by bed. ', 1000), ...titles)],
      tactical_plan: [tacticalPlan(step('outline it'))],
      executor_step: [execute([], true, 'outlined')],
      tactical_critique: [approve()],
    });
    const agent = await harness.agent({ budgets: { maxSteps: 6 } });
    const thread = await harness.thread(agent);
    expect((await harness.say(thread, 'Write the report')).run.reason).toMatch(/^step budget spent/);
    const plan = (await harness.plans.listByThread(USER, thread.id, { limit: 1 }))[0]!;
    const settingsAt = clock.now().toISOString();
    await harness.storage.agents.updateSetting(USER, agent.id, 'planner', { overlord: {} }, settingsAt);
    await harness.storage.agents.updateSetting(USER, agent.id, 'context', { maxTokens: 1000, answerTokens: 500 }, settingsAt);
    const context = new ContextWindow({ models: () => model, logger: captureLogs('warn').logger, clock, agents: harness.storage.agents });
    const bounded = overlordOver(harness, queue, () => model, clock, context);
    const decisions = new ScriptedChatModel({ overlord_decision: ['let me think about it', { decision: 'wait', reason: 'the person is away', next_check_at: null }] });
    model = decisions;
    now += 20 * MINUTE;
    expect(await bounded.wake({ userId: USER, threadId: thread.id, planId: plan.id, agentId: agent.id })).toMatchObject({ outcome: 'wait', modelCalled: true, reason: 'the person is away' });
    const calls = decisions.callsOf('overlord_decision');
    expect(calls).toHaveLength(2);
    expect(textOf(calls[0]!.messages.at(-1)!.content)).toContain('[… cut to fit the context budget]');
    expect(textOf(calls[1]!.messages.at(-1)!.content)).toMatch(/^That answer was not a valid overlord_decision:/);
    const counter = new TokenCounter();
    for (const call of calls) {
      const tokens = call.messages.reduce((sum, message) => sum + counter.message(message).tokens, 0) + counter.tools(call.tools);
      expect(tokens, `overlord_decision call ${call.index}`).toBeLessThanOrEqual(1000 - 500);
    }
  });
}

/** The overlord through the backend's real JobQueue (embedded on SQLite, pg-boss on PostgreSQL). */
export function overlordRealQueueSuite(backend: () => Backend): void {
  let harness: PlannerHarness;
  let jobs: JobQueue;
  let model = new ScriptedChatModel();
  let overlord: Overlord;
  const clock = { now: () => new Date() };

  beforeAll(async () => {
    const heartbeats: PlanHeartbeats = { arm: (input) => overlord.arm(input), disarm: (threadId) => overlord.disarm(threadId) };
    harness = await openPlannerHarness(backend(), { model: () => model, heartbeats, clock });
    const target = backend();
    jobs = openJobQueue({ storage: harness.storage, databaseUrl: target.kind === 'postgres' ? target.url : undefined, schema: harness.place.schema, clock, logger: captureLogs('warn').logger });
    overlord = overlordOver(harness, jobs, () => model, clock);
    await overlord.start();
    await jobs.start();
  });
  afterAll(async () => {
    await jobs?.stop();
    const target = backend();
    await harness?.destroy();
    if (target.kind === 'postgres') await dropSchema(pgBossSchemaFor(harness.place.schema), target.url);
  });

  it('a stopped plan\'s heartbeat is delivered by the real JobQueue and `end` stops it', async () => {
    model = new ScriptedChatModel({
      knowledge_plan: [noKnowledge],
      strategic_plan: [strategicPlan('Tidy up', 'One', 'Two')],
      tactical_plan: [tacticalPlan(step('tidy'))],
      executor_step: [execute([])],
      tactical_critique: [approve()],
      overlord_decision: [{ decision: 'end', reason: 'nothing urgent', next_check_at: null }],
    });
    const agent = await harness.agent({ budgets: { maxSteps: 6 }, overlord: { checkAfterMs: 1000, minIdleMs: 0 } });
    const thread = await harness.thread(agent);
    const outcome = await harness.say(thread, 'Tidy up');
    expect(outcome.run.reason).toMatch(/^step budget spent/);
    const planId = (await harness.plans.listByThread(USER, thread.id, { limit: 1 }))[0]!.id;
    const deadline = Date.now() + 20_000;
    let heartbeat = (await harness.plans.get(USER, planId))?.heartbeat;
    while (heartbeat?.status !== 'ended' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      heartbeat = (await harness.plans.get(USER, planId))?.heartbeat;
    }
    expect(heartbeat).toMatchObject({ status: 'ended', wakes: 1, lastDecision: 'end', lastReason: 'nothing urgent' });
    expect((model as ScriptedChatModel).callsOf('overlord_decision')).toHaveLength(1);
  });
}

function overlordOver(harness: PlannerHarness, jobs: JobQueue, model: () => ScriptedChatModel, clock: { now(): Date }, context?: ContextWindow): Overlord {
  return new Overlord({
    context,
    jobs,
    plans: harness.plans,
    threads: harness.storage.threads,
    agents: harness.storage.agents,
    runs: harness.storage.runs,
    models: () => model(),
    defaultModel: 'scripted',
    runHeartbeat: (plan, heartbeat) => harness.service.runHeartbeat(plan, heartbeat),
    isBusy: (threadId) => harness.service.isBusy(threadId),
    clock,
    logger: captureLogs('debug').logger,
  });
}
