import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { HumanMessage } from '@langchain/core/messages';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NODES } from '../../src/agent/planner/planner-graph.js';
import { plannerMetadataSchema } from '../../src/domain/planner/planner-state.js';
import type { VigilEvent } from '../../src/domain/events.js';
import { edgesOf, openPlannerHarness, USER, type PlannerHarness } from '../helpers/planner-harness.js';
import { approve, carryOn, execute, noKnowledge, revise, step, strategicPlan, tacticalPlan } from '../helpers/planner-scripts.js';
import { always, ScriptedChatModel } from '../helpers/scripted-model.js';
import type { Backend } from '../helpers/test-server.js';

/**
 * The planner graph on a real database, driven by the real run coordinator, with a
 * scripted model: every edge, every bound (I9), restarts (I10), what people see (I2).
 */
export function plannerGraphSuite(backend: () => Backend): void {
  let harness: PlannerHarness;
  let model = new ScriptedChatModel();
  let site: Server;
  let siteHost: string;
  const walked = new Set<string>();
  const siteRequests: string[] = [];
  const SERVED_TOKEN = 'srvTOKEN0123456789abcdef';

  beforeAll(async () => {
    harness = await openPlannerHarness(backend(), { model: () => model });
    site = createServer((request, response) => {
      siteRequests.push(request.url ?? '');
      response.writeHead(200, { 'content-type': 'text/plain' });
      if (request.url?.startsWith('/token')) return response.end(`Your session: Bearer ${SERVED_TOKEN}`);
      response.end(request.url === '/menu' ? 'Tonight: shoyu ramen, miso ramen' : 'hello');
    });
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    siteHost = `127.0.0.1:${(site.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => site?.close(resolve));
    await harness?.destroy();
  });

  /** Run a person's message on a fresh thread of a fresh agent; record the edges it walked. */
  async function plan(script: ScriptedChatModel, text: string, settings: Record<string, unknown> = {}) {
    model = script;
    const agent = await harness.agent(settings);
    const thread = await harness.thread(agent);
    const outcome = await harness.say(thread, text);
    return { agent, thread, outcome, ...(await observe(thread.id, outcome.run.id)) };
  }

  async function observe(threadId: string, runId: string) {
    const path = await harness.path(threadId);
    for (const edge of edgesOf(path)) walked.add(edge);
    const events = harness.events.ofRun(runId);
    const planId = (await harness.state(threadId)).planner.activePlanId;
    const stored = planId ? await harness.plans.get(USER, planId) : undefined;
    return { path, events, plan: stored };
  }

  async function resume(thread: { id: string; userId: string; agentId: string }, script: ScriptedChatModel, planId: string) {
    model = script;
    const outcome = await harness.service.resume(USER, planId);
    return { outcome, ...(await observe(thread.id, outcome.run.id)) };
  }

  function types(events: VigilEvent[]): string[] {
    return events.map((event) => event.type);
  }

  /** run.end is the last event of the run, and a stop's plan.complete comes before it (I9). */
  function expectStopAnnounced(events: VigilEvent[], reason: string | RegExp) {
    const last = events.at(-1);
    expect(last?.type).toBe('run.end');
    const complete = events.filter((event) => event.type === 'plan.complete');
    expect(complete).toHaveLength(1);
    const matcher = typeof reason === 'string' ? reason : expect.stringMatching(reason);
    expect(complete[0]).toMatchObject({ status: 'stopped', reason: matcher });
    expect(last).toMatchObject({ status: 'succeeded', reason: matcher });
  }

  /** On a path that completed a plan, every execution is reviewed by the tactical critic, and the strategic critic has the last word. */
  function expectCriticsOnPath(path: string[]) {
    path.forEach((node, index) => {
      if (node === NODES.executor && path[index + 1] !== NODES.executor) expect(path[index + 1]).toBe(NODES.tacticalCritic);
    });
    expect(path.at(-3)).toBe(NODES.strategicCritic);
    expect(path.at(-2)).toBe(NODES.complete);
  }

  describe('plans that complete', () => {
    it('a three-milestone plan completes with its tool calls recorded; people see only their message and the reply (I2)', async () => {
      const script = new ScriptedChatModel({
        knowledge_plan: [{ queries: [{ question: 'What food does Alice like?', sources: ['memory'], priority: 5, toolCall: { tool: 'memory_search', args: { query: 'ramen' } } }] }],
        knowledge_answers: [{ results: [{ query: 'What food does Alice like?', answer: 'Ramen', sources: ['memory'], confidence: 0.9 }] }],
        strategic_plan: [strategicPlan('Plan a ramen evening', 'Check the time', 'Fetch the menu', 'Remember the plan')],
        tactical_plan: [tacticalPlan(step('Look at the clock', ['current_time'])), tacticalPlan(step('Read the menu', ['http_fetch'])), tacticalPlan(step('Save the plan', ['memory_write']))],
        executor_step: [
          execute([{ tool: 'current_time', args: { timeZone: 'Europe/Paris' } }], true, 'It is evening in Paris'),
          execute([{ tool: 'http_fetch', args: { url: `http://${siteHost}/menu` } }], true, 'The menu has shoyu and miso ramen'),
          execute([{ tool: 'memory_write', args: { content: 'Alice plans a ramen evening' } }], true, 'Saved'),
        ],
        tactical_critique: always(approve()),
        strategic_critique: [approve('the evening is planned')],
        text: ['Your ramen evening is planned: shoyu or miso, tonight.'],
      });
      model = script;
      const agent = await harness.agent({ fetch: { allowedHosts: ['127.0.0.1'] } });
      await harness.storage.memories.add({ userId: USER, agentId: agent.id }, { id: randomUUID(), content: 'Alice loves ramen', origin: { by: 'api' } }, new Date().toISOString());
      const thread = await harness.thread(agent);
      const outcome = await harness.say(thread, 'Plan a ramen evening for me');
      const { path, events, plan: stored } = await observe(thread.id, outcome.run.id);

      expect(outcome.run).toMatchObject({ status: 'succeeded', reason: null });
      expect(stored).toMatchObject({ status: 'completed', goal: 'Plan a ramen evening', priority: 'high' });
      expect(stored!.milestones.map((milestone) => [milestone.title, milestone.status, milestone.criticDecision])).toEqual([
        ['Check the time', 'completed', 'approve'],
        ['Fetch the menu', 'completed', 'approve'],
        ['Remember the plan', 'completed', 'approve'],
      ]);
      expect(stored!.knowledge?.results).toEqual([{ query: 'What food does Alice like?', answer: 'Ramen', sources: ['memory'], confidence: 0.9 }]);

      const calls = (await harness.plans.listToolCalls(USER, stored!.id, { limit: 50 })).toolCalls;
      expect(calls.map((call) => [call.seq, call.tool, call.status])).toEqual([
        [1, 'memory_search', 'succeeded'],
        [2, 'current_time', 'succeeded'],
        [3, 'http_fetch', 'succeeded'],
        [4, 'memory_write', 'succeeded'],
      ]);
      expect(calls[0]!.output).toContain('Alice loves ramen');
      expect(calls[0]!.milestoneId).toBeNull(); // the knowledge layer's call
      expect(calls[2]!.output).toContain('shoyu ramen');
      expect(calls[2]!.milestoneId).toBe(stored!.milestones[1]!.id);
      expect((await harness.storage.memories.search({ userId: USER, agentId: agent.id }, 'ramen evening', { limit: 5 })).map((memory) => memory.content)).toContain(
        'Alice plans a ramen evening',
      );

      const progress = types(events).filter((type) => type !== 'message.delta' && type !== 'message.end');
      expect(progress).toEqual([
        'run.start',
        'plan.create',
        ...['step.start', 'step.end', 'critic.decide'],
        ...['step.start', 'step.end', 'critic.decide'],
        ...['step.start', 'step.end', 'critic.decide'],
        'critic.decide',
        'plan.complete',
        'run.end',
      ]);
      expect(events.find((event) => event.type === 'plan.complete')).toMatchObject({ status: 'completed' });
      // Only the complete node's tokens stream to the person.
      const streamed = events.flatMap((event) => (event.type === 'message.delta' ? [event.delta] : [])).join('');
      expect(streamed).toBe('Your ramen evening is planned: shoyu or miso, tonight.');

      const visible = await harness.storage.threads.history(USER, thread.id, { visibility: 'user', limit: 50 });
      const all = await harness.storage.threads.history(USER, thread.id, { visibility: 'all', limit: 50 });
      expect(visible.messages.map((message) => [message.type, message.content])).toEqual([
        ['human', 'Plan a ramen evening for me'],
        ['ai', 'Your ramen evening is planned: shoyu or miso, tonight.'],
      ]);
      expect(all.messages).toHaveLength(2); // the planner's reasoning is in the plan's tables, never in messages
      expectCriticsOnPath(path);
      expect(harness.heartbeats.disarmed).toContain(thread.id);
    });

    it('the critics are reached on every path: continue, revise, next milestone, and a strategic revision', async () => {
      const script = new ScriptedChatModel({
        knowledge_plan: [noKnowledge],
        strategic_plan: [strategicPlan('Ship it', 'Build', 'Test'), strategicPlan('Ship it', 'Release')],
        tactical_plan: [tacticalPlan(step('part one'), step('part two')), tacticalPlan(step('redo it')), tacticalPlan(step('run tests')), tacticalPlan(step('tag release'))],
        executor_step: [execute([], false, 'half way'), execute([], true, 'part one done'), execute([], true, 'part two done'), execute([], true, 'redone'), execute([], true, 'tested'), execute([], true, 'released')],
        tactical_critique: [carryOn(), revise('part two is wrong'), approve(), approve(), approve()],
        strategic_critique: [revise('nothing was released'), approve()],
        text: ['Shipped.'],
      });
      const { outcome, path, plan: stored } = await plan(script, 'Ship the thing');
      expect(outcome.run.status).toBe('succeeded');
      expect(stored?.status).toBe('completed');
      expect(stored?.milestones.map((milestone) => [milestone.title, milestone.status, milestone.revisionCount])).toEqual([
        ['Build', 'completed', 1],
        ['Test', 'completed', 0],
        ['Release', 'completed', 0],
      ]);
      expect(stored?.strategicRevisionCount).toBe(1);
      expect(path).toEqual([
        '__start__',
        NODES.recall,
        NODES.knowledge,
        NODES.strategicPlanner,
        NODES.tacticalPlanner,
        NODES.executor,
        NODES.executor,
        NODES.tacticalCritic,
        NODES.executor,
        NODES.tacticalCritic,
        NODES.tacticalPlanner,
        NODES.executor,
        NODES.tacticalCritic,
        NODES.tacticalPlanner,
        NODES.executor,
        NODES.tacticalCritic,
        NODES.strategicCritic,
        NODES.strategicPlanner,
        NODES.tacticalPlanner,
        NODES.executor,
        NODES.tacticalCritic,
        NODES.strategicCritic,
        NODES.complete,
        '__end__',
      ]);
      expectCriticsOnPath(path);
      // The revise went back with the critic's reason.
      expect(JSON.stringify(script.callsOf('tactical_plan')[1]!.messages.at(-1)?.content)).toContain('part two is wrong');
    });

    it('I9: the tactical revision cap stops the plan (`stopped`, with the reason), never `completed`', async () => {
      const script = new ScriptedChatModel({
        knowledge_plan: [noKnowledge],
        strategic_plan: always(strategicPlan('Polish', 'Polish once more')),
        tactical_plan: always(tacticalPlan(step('polish'))),
        executor_step: always(execute([], true, 'polished')),
        tactical_critique: always(revise('could be shinier')),
        strategic_critique: always(approve()),
        text: ['unused'],
      });
      const { outcome, events, plan: stored, path } = await plan(script, 'Polish this', { budgets: { maxRevisions: 2 } });
      const reason = 'revision cap reached: the tactical critic still asked for a revision after 2 (limit 2): could be shinier';
      expect(outcome.run).toMatchObject({ status: 'succeeded', reason });
      expect(stored).toMatchObject({ status: 'stopped', reason });
      expect(stored?.endedAt ?? null).toBeNull();
      // The milestone was never approved: it stays active, with the critic's last word.
      expect(stored?.milestones).toHaveLength(1);
      expect(stored!.milestones[0]).toMatchObject({ status: 'active', revisionCount: 2, criticDecision: 'revise', criticReason: 'could be shinier' });
      const decisions = events.filter((event) => event.type === 'critic.decide');
      expect(decisions.map((event) => event.decision)).toEqual(['revise', 'revise', 'revise']);
      expectStopAnnounced(events, reason);
      expect(path.at(-3)).toBe(NODES.tacticalCritic);
      expect(path.at(-2)).toBe(NODES.complete);
      expect(script.callsOf('strategic_critique')).toHaveLength(0);
      expect(script.callsOf('text')).toHaveLength(0); // no model call after a bound
      const reply = outcome.messages.find((message) => message.type === 'ai');
      expect(String(reply?.content)).toContain(reason);
    });

    it('I9: the strategic revision cap stops the plan too; only an approved plan is `completed`', async () => {
      const script = new ScriptedChatModel({
        knowledge_plan: [noKnowledge],
        strategic_plan: always(strategicPlan('Polish', 'Polish once more')),
        tactical_plan: always(tacticalPlan(step('polish'))),
        executor_step: always(execute([], true, 'polished')),
        tactical_critique: always(approve()),
        strategic_critique: always(revise('still not perfect')),
        text: ['unused'],
      });
      const { outcome, events, plan: stored } = await plan(script, 'Polish this', { budgets: { maxRevisions: 1 } });
      const reason = 'revision cap reached: the strategic critic still asked for a revision after 1 (limit 1): still not perfect';
      expect(outcome.run).toMatchObject({ status: 'succeeded', reason });
      expect(stored).toMatchObject({ status: 'stopped', reason, strategicRevisionCount: 1 });
      const strategic = events.flatMap((event) => (event.type === 'critic.decide' && event.level === 'strategic' ? [event.decision] : []));
      expect(strategic).toEqual(['revise', 'revise']);
      expectStopAnnounced(events, reason);
      expect(events.some((event) => event.type === 'plan.complete' && event.status === 'completed')).toBe(false);
    });
  });

  describe('I4: tool-call arguments and results are redacted like the envelope before they are stored or shown', () => {
    it('I4: an api_key / bearer token argument and a token in the result are stored and served redacted; the tool got the real values', async () => {
      const apiKey = 'sk-proj-ABCDEFGHIJKLMNOPQRSTUV012345';
      const bearer = 'Bearer abcDEF0123456789ghiJKL';
      const script = new ScriptedChatModel({
        knowledge_plan: [noKnowledge],
        strategic_plan: [strategicPlan('Call the API', 'Fetch')],
        tactical_plan: [tacticalPlan(step('fetch it', ['http_fetch']))],
        executor_step: [execute([{ tool: 'http_fetch', args: { url: `http://${siteHost}/token?api_key=${apiKey}`, api_key: apiKey, headers: { authorization: bearer } } }], true, 'fetched')],
        tactical_critique: always(approve()),
        strategic_critique: [approve()],
        text: ['Done.'],
      });
      const { plan: stored, thread } = await plan(script, 'Call the API', { fetch: { allowedHosts: ['127.0.0.1'] } });
      expect(siteRequests).toContain(`/token?api_key=${apiKey}`); // the tool itself used the real key

      const calls = (await harness.plans.listToolCalls(USER, stored!.id, { limit: 10 })).toolCalls;
      const served = await harness.service.detail(USER, stored!.id); // what GET /api/plans/:id returns
      const state = await harness.state(thread.id);
      for (const text of [JSON.stringify(calls), JSON.stringify(served), JSON.stringify(state.planner.toolResults)]) {
        expect(text).not.toContain(apiKey);
        expect(text).not.toContain('abcDEF0123456789ghiJKL');
        expect(text).not.toContain(SERVED_TOKEN);
      }
      expect(calls).toHaveLength(1);
      expect(calls[0]!.status).toBe('succeeded');
      expect(calls[0]!.args).toEqual({ url: `http://${siteHost}/token?api_key=[redacted]`, api_key: '[redacted]', headers: { authorization: '[redacted]' } });
      expect(calls[0]!.output).toContain('Bearer [redacted]');
      // The executor step after the call saw the redacted result too.
      expect(JSON.stringify(script.callsOf('tactical_critique')[0]!.messages)).toContain('Bearer [redacted]');
    });
  });

  describe('I9: every loop is bounded, every stop has a reason, and run.end follows', () => {
    it('I9: an A→B→A cycle (executor ↔ critic without progress) stops with its reason', async () => {
      const script = new ScriptedChatModel({
        knowledge_plan: [noKnowledge],
        strategic_plan: [strategicPlan('Loop', 'Never done')],
        tactical_plan: [tacticalPlan(step('the only step'))],
        executor_step: [execute([], true, 'did it')],
        tactical_critique: always(carryOn('keep going')),
        text: ['unused'],
      });
      const { outcome, events, plan: stored, path } = await plan(script, 'Go round in circles');
      // The critic's first "continue" (after the only step) starts the cycle: critic → executor (nothing left) → critic …
      const reason = 'repeated node cycle: tactical_critic → tactical_executor → tactical_critic went round 3 times without progress (limit 3)';
      expect(outcome.run).toMatchObject({ status: 'succeeded', reason });
      expect(stored).toMatchObject({ status: 'stopped', reason });
      expectStopAnnounced(events, reason);
      expect(path.slice(path.indexOf(NODES.tacticalPlanner))).toEqual([
        NODES.tacticalPlanner,
        NODES.executor, // runs the only step
        NODES.tacticalCritic, // continue ×3 …
        NODES.executor, // … nothing left to run
        NODES.tacticalCritic,
        NODES.executor,
        NODES.tacticalCritic,
        NODES.executor, // the visit that closes the third turn: stopped before doing anything
        NODES.complete,
        '__end__',
      ]);
      expect(script.callsOf('tactical_critique')).toHaveLength(3);
      expect(script.callsOf('executor_step')).toHaveLength(1); // the rounds after it had nothing left to run
      // The stop is visible to the person, with its reason; the critic was never bypassed.
      const reply = outcome.messages.find((message) => message.type === 'ai');
      expect(String(reply?.content)).toContain(reason);
      expect(String(reply?.content)).toContain('can be resumed');
      expect(script.callsOf('text')).toHaveLength(0); // no model call after a bound
    });

    it('I9: an A→A loop (the executor never finishes its step) stops at the same-node limit', async () => {
      const script = new ScriptedChatModel({
        knowledge_plan: [noKnowledge],
        strategic_plan: [strategicPlan('Think', 'Think hard')],
        tactical_plan: [tacticalPlan(step('ponder'))],
        executor_step: always(execute([], false, 'still thinking')),
      });
      const { outcome, events, plan: stored, path } = await plan(script, 'Think forever');
      const reason = 'same-node loop: tactical_executor ran 15 times in a row (limit 15)';
      expect(outcome.run.reason).toBe(reason);
      expect(stored?.reason).toBe(reason);
      expectStopAnnounced(events, reason);
      expect(script.callsOf('executor_step')).toHaveLength(15);
      expect(path.filter((node) => node === NODES.executor)).toHaveLength(16); // the 16th visit tripped the bound
    });

    it('I9: the total step budget stops a run with its reason', async () => {
      const script = new ScriptedChatModel({
        knowledge_plan: [noKnowledge],
        strategic_plan: [strategicPlan('Long', 'One', 'Two')],
        tactical_plan: always(tacticalPlan(step('work'))),
        executor_step: always(execute([], true)),
        tactical_critique: always(approve()),
      });
      const { outcome, events, plan: stored } = await plan(script, 'A long job', { budgets: { maxSteps: 6 } });
      const reason = 'step budget spent: 6 graph steps this run (limit 6)';
      expect(outcome.run.reason).toBe(reason);
      expectStopAnnounced(events, reason);
      expect(stored?.milestones.map((milestone) => milestone.status)).toEqual(['completed', 'active']);
    });

    it('I9: the token budget stops a run with its reason', async () => {
      const script = new ScriptedChatModel({ knowledge_plan: [noKnowledge], strategic_plan: [strategicPlan('Pricey', 'One')] });
      const { outcome, events } = await plan(script, 'Spend tokens', { budgets: { maxTokens: 100 } });
      expect(outcome.run.reason).toMatch(/^token budget spent: \d+ tokens this run \(limit 100\)$/);
      expectStopAnnounced(events, /^token budget spent/);
      expect(script.callsOf('strategic_plan')).toHaveLength(0);
    });

    it('I9: the tool-call budget refuses the call over it, records it, and stops the run', async () => {
      const script = new ScriptedChatModel({
        knowledge_plan: [noKnowledge],
        strategic_plan: [strategicPlan('Busy', 'Call tools')],
        tactical_plan: [tacticalPlan(step('two calls', ['current_time']))],
        executor_step: [execute([{ tool: 'current_time' }, { tool: 'current_time', args: { timeZone: 'Asia/Tokyo' } }])],
      });
      const { outcome, events, plan: stored } = await plan(script, 'Call two tools', { budgets: { maxToolCalls: 1 } });
      const reason = 'tool-call budget spent: 1 tool calls this run (limit 1)';
      expect(outcome.run.reason).toBe(reason);
      expectStopAnnounced(events, reason);
      const calls = (await harness.plans.listToolCalls(USER, stored!.id, { limit: 10 })).toolCalls;
      expect(calls.map((call) => [call.tool, call.status, call.error])).toEqual([
        ['current_time', 'succeeded', null],
        ['current_time', 'refused', reason],
      ]);
    });

    it('I9: the breaker stops repeated identical tool calls (same tool, same arguments in any order)', async () => {
      const script = new ScriptedChatModel({
        knowledge_plan: [noKnowledge],
        strategic_plan: [strategicPlan('Stuck', 'Search')],
        tactical_plan: [tacticalPlan(step('search', ['memory_search']))],
        executor_step: [
          execute([{ tool: 'memory_search', args: { query: 'x', limit: 2 } }], false),
          execute([{ tool: 'memory_search', args: { limit: 2, query: 'x' } }], false),
          execute([{ tool: 'memory_search', args: { query: 'x', limit: 2 } }], false),
          execute([{ tool: 'memory_search', args: { query: 'x', limit: 2 } }], false),
        ],
      });
      const { outcome, events, plan: stored, path } = await plan(script, 'Search the same thing again and again');
      const reason = 'repeated identical tool call: memory_search with the same arguments was already made 3 times this run (limit 3)';
      expect(outcome.run.reason).toBe(reason);
      expectStopAnnounced(events, reason);
      expect(path.at(-3)).toBe(NODES.executor); // tactical_executor → complete: a stop, not the end of the plan
      const calls = (await harness.plans.listToolCalls(USER, stored!.id, { limit: 10 })).toolCalls;
      expect(calls.map((call) => call.status)).toEqual(['succeeded', 'succeeded', 'succeeded', 'refused']);
      // The stored plan keeps the step running, so a resume continues it: recall → tactical_executor.
      const resumed = await resume(
        { id: stored!.threadId, userId: USER, agentId: stored!.agentId },
        new ScriptedChatModel({ executor_step: [execute([], true, 'found it')], tactical_critique: [approve()], strategic_critique: [approve()], text: ['Found.'] }),
        stored!.id,
      );
      expect(resumed.path.slice(0, 3)).toEqual(['__start__', NODES.recall, NODES.executor]);
      expect(resumed.plan?.status).toBe('completed');
    });

    it('a malformed structured answer is retried with the validation error, then accepted', async () => {
      const script = new ScriptedChatModel({
        knowledge_plan: [noKnowledge],
        strategic_plan: ['I think we should start by thinking.', { goal: 'Retry', milestones: [] }, strategicPlan('Retry', 'Once')],
        tactical_plan: [tacticalPlan(step('do'))],
        executor_step: [execute([])],
        tactical_critique: [approve()],
        strategic_critique: [approve()],
        text: ['Done after retries.'],
      });
      const { outcome, plan: stored } = await plan(script, 'Try again');
      expect(outcome.run).toMatchObject({ status: 'succeeded', reason: null });
      expect(stored?.status).toBe('completed');
      const calls = script.callsOf('strategic_plan');
      expect(calls).toHaveLength(3);
      expect(String(calls[2]!.messages.at(-1)?.content)).toMatch(/not a valid strategic_plan: .*milestones/);
    });

    it('I9: malformed answers past the retries end the run with a reason — at every planning and critic node — and resume continues', async () => {
      const garbage = always('not json at all');
      // knowledge → complete
      const knowledge = await plan(new ScriptedChatModel({ knowledge_plan: garbage }), 'garbage knowledge');
      expect(knowledge.outcome.run.reason).toMatch(/^the model gave no valid knowledge plan after 3 attempts/);
      expectStopAnnounced(knowledge.events, /no valid knowledge plan/);
      expect((await harness.state(knowledge.thread.id)).planner.lastError).toMatchObject({ node: NODES.knowledge, retryCount: 2, error: knowledge.outcome.run.reason });
      // strategic_planner → complete
      const strategic = await plan(new ScriptedChatModel({ knowledge_plan: [noKnowledge], strategic_plan: garbage }), 'garbage strategy');
      expect(strategic.outcome.run.reason).toMatch(/^the model gave no valid strategic plan after 3 attempts/);
      // tactical_planner → complete: a step naming a tool that does not exist is malformed
      const tactical = await plan(
        new ScriptedChatModel({ knowledge_plan: [noKnowledge], strategic_plan: [strategicPlan('T', 'One')], tactical_plan: always(tacticalPlan(step('x', ['rm_rf']))) }),
        'unknown tools',
      );
      expect(tactical.outcome.run.reason).toMatch(/^the model gave no valid tactical plan after 3 attempts: .*unknown tools: rm_rf/);
      // …resumed: recall → tactical_planner
      const resumedTactical = await resume(
        tactical.thread,
        new ScriptedChatModel({ tactical_plan: [tacticalPlan(step('x'))], executor_step: [execute([])], tactical_critique: [approve()], strategic_critique: [approve()], text: ['ok'] }),
        tactical.plan!.id,
      );
      expect(resumedTactical.path.slice(0, 3)).toEqual(['__start__', NODES.recall, NODES.tacticalPlanner]);
      expect(resumedTactical.plan?.status).toBe('completed');
      // tactical_critic → complete
      const critic = await plan(
        new ScriptedChatModel({ knowledge_plan: [noKnowledge], strategic_plan: [strategicPlan('C', 'One')], tactical_plan: [tacticalPlan(step('x'))], executor_step: [execute([])], tactical_critique: garbage }),
        'garbage critique',
      );
      expect(critic.outcome.run.reason).toMatch(/^the model gave no valid tactical critique after 3 attempts/);
      expect(critic.path.slice(-3)).toEqual([NODES.tacticalCritic, NODES.complete, '__end__']);
      // strategic_critic → complete, then resumed: recall → strategic_critic
      const final = await plan(
        new ScriptedChatModel({
          knowledge_plan: [noKnowledge],
          strategic_plan: [strategicPlan('F', 'One')],
          tactical_plan: [tacticalPlan(step('x'))],
          executor_step: [execute([])],
          tactical_critique: [approve()],
          strategic_critique: garbage,
        }),
        'garbage final review',
      );
      expect(final.outcome.run.reason).toMatch(/^the model gave no valid strategic critique after 3 attempts/);
      const resumedFinal = await resume(final.thread, new ScriptedChatModel({ strategic_critique: [approve()], text: ['ok'] }), final.plan!.id);
      expect(resumedFinal.path.slice(0, 3)).toEqual(['__start__', NODES.recall, NODES.strategicCritic]);
      expect(resumedFinal.plan?.status).toBe('completed');
    });

    it('a resume request for a finished plan stops with "nothing to resume"; a synthetic input without a plan just gets an answer', async () => {
      const done = await plan(
        new ScriptedChatModel({ knowledge_plan: [noKnowledge], strategic_plan: [strategicPlan('D', 'One')], tactical_plan: [tacticalPlan(step('x'))], executor_step: [execute([])], tactical_critique: [approve()], strategic_critique: [approve()], text: ['done'] }),
        'finish this',
      );
      model = new ScriptedChatModel();
      const input = new HumanMessage({ id: randomUUID(), content: 'Continue the plan.', additional_kwargs: { synthetic: true, trigger_type: 'user', planner: { action: 'resume', planId: done.plan!.id } } });
      const outcome = await harness.send(done.thread, input);
      const observed = await observe(done.thread.id, outcome.run.id);
      expect(outcome.run.reason).toBe(`plan ${done.plan!.id} is completed; there is nothing to resume`);
      expect(observed.path).toEqual(['__start__', NODES.recall, NODES.complete, '__end__']);
      expect(observed.plan?.status).toBe('completed'); // untouched
      expect(observed.events.at(-1)?.type).toBe('run.end');

      model = new ScriptedChatModel({ text: ['Hello! Nothing is planned yet.'] });
      const agent = await harness.agent();
      const thread = await harness.thread(agent);
      const followUp = new HumanMessage({ id: randomUUID(), content: 'Continue our conversation naturally.', additional_kwargs: { synthetic: true, trigger_type: 'check_in' } });
      const reply = await harness.send(thread, followUp, 'autonomy');
      expect(reply.run).toMatchObject({ status: 'succeeded', reason: null });
      expect(reply.messages.filter((message) => message.visibility === 'user').map((message) => message.content)).toEqual(['Hello! Nothing is planned yet.']);
      expect(await harness.plans.listByThread(USER, thread.id, { limit: 5 })).toEqual([]);
      await observe(thread.id, reply.run.id);
    });

    it('a node that fails (the model errors) fails the run, but the plan is stopped and plan.complete comes before run.end', async () => {
      const script = new ScriptedChatModel({ knowledge_plan: [noKnowledge], strategic_plan: [strategicPlan('E', 'One')] }); // no tactical answer: the model throws
      const { outcome, events, plan: stored, thread } = await plan(script, 'Fail in the middle');
      expect(outcome.run).toMatchObject({ status: 'failed', errorCode: 'MODEL_ERROR' });
      expect(stored).toMatchObject({ status: 'stopped' });
      expect(stored?.reason).toMatch(/^error in tactical_planner: scripted model: no answer left for "tactical_plan"/);
      expect(types(events).slice(-2)).toEqual(['plan.complete', 'run.end']);
      expect(events.at(-1)).toMatchObject({ type: 'run.end', status: 'failed' });
      expect(harness.heartbeats.armed.some((armed) => armed.threadId === thread.id && armed.planId === stored!.id)).toBe(true);
    });
  });

  it('a scheduled task (a synthetic cron input) is planned like a request; its input stays internal (I2)', async () => {
    model = new ScriptedChatModel({
      knowledge_plan: [noKnowledge],
      strategic_plan: [strategicPlan('Morning digest', 'Collect')],
      tactical_plan: [tacticalPlan(step('collect'))],
      executor_step: [execute([])],
      tactical_critique: [approve()],
      strategic_critique: [approve()],
      text: ['Here is your digest.'],
    });
    const agent = await harness.agent();
    const thread = await harness.thread(agent);
    const task = new HumanMessage({ id: randomUUID(), content: 'Prepare the morning digest', additional_kwargs: { synthetic: true, trigger_type: 'cron', trigger_reason: 'schedule "digest"' } });
    const outcome = await harness.send(thread, task, 'cron');
    const { plan: stored, path } = await observe(thread.id, outcome.run.id);
    expect(stored).toMatchObject({ status: 'completed', request: 'Prepare the morning digest', sourceMessageId: task.id });
    expect(path[2]).toBe(NODES.knowledge);
    const visible = await harness.storage.threads.history(USER, thread.id, { visibility: 'user', limit: 10 });
    expect(visible.messages.map((message) => message.content)).toEqual(['Here is your digest.']);
  });

  it('a cancelled run still announces its plan\'s stop: plan.complete, then run.end (cancelled)', async () => {
    let threadId = '';
    const script = new ScriptedChatModel({
      knowledge_plan: [noKnowledge],
      strategic_plan: [strategicPlan('Cancel me', 'One')],
      tactical_plan: [
        () => {
          harness.coordinator.cancel(USER, harness.coordinator.activeRunOf(threadId)!); // the person presses cancel mid-plan
          return tacticalPlan(step('never run'));
        },
      ],
    });
    model = script;
    const agent = await harness.agent();
    const thread = await harness.thread(agent);
    threadId = thread.id;
    const outcome = await harness.say(thread, 'Start, then cancel');
    const { events, plan: started } = await observe(thread.id, outcome.run.id);
    expect(outcome.run).toMatchObject({ status: 'cancelled', reason: 'the run was cancelled' });
    // The event is sent inside the cancel itself; the plan's record follows it.
    let stored = await harness.plans.get(USER, started!.id);
    for (let tries = 0; stored?.status !== 'stopped' && tries < 50; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      stored = await harness.plans.get(USER, started!.id);
    }
    expect(stored).toMatchObject({ status: 'stopped', reason: 'cancelled: the run was cancelled' });
    expect(events.find((event) => event.type === 'plan.complete')).toMatchObject({ status: 'stopped', reason: 'cancelled: the run was cancelled', planId: started!.id });
    expect(types(events).slice(-2)).toEqual(['plan.complete', 'run.end']);
    expect(events.at(-1)).toMatchObject({ status: 'cancelled' });
    expect(harness.heartbeats.armed.some((armed) => armed.threadId === thread.id)).toBe(false); // a person's cancel is not picked up by the overlord
  });

  describe('I10: state is plain data and survives a restart', () => {
    it('I10: the checkpointed planner state is plain, schema-valid data', async () => {
      const { thread } = await plan(
        new ScriptedChatModel({ knowledge_plan: [noKnowledge], strategic_plan: [strategicPlan('P', 'One')], tactical_plan: [tacticalPlan(step('x', ['current_time']))], executor_step: [execute([{ tool: 'current_time' }])], tactical_critique: [approve()], strategic_critique: [approve()], text: ['ok'] }),
        'plain data please',
      );
      const { planner } = await harness.state(thread.id);
      expect(JSON.parse(JSON.stringify(planner))).toEqual(planner);
      expect(plannerMetadataSchema.strict().parse(planner)).toEqual(planner);
      expect(findFunction(planner)).toBeNull();
    });

    it('I10: a plan stopped by a budget survives a restart; resume continues from the stored plan, completed milestones are not redone', async () => {
      const first = new ScriptedChatModel({
        knowledge_plan: [noKnowledge],
        strategic_plan: [strategicPlan('Three parts', 'Part one', 'Part two', 'Part three')],
        tactical_plan: [tacticalPlan(step('one', ['current_time']))],
        executor_step: [execute([{ tool: 'current_time' }], true, 'part one done')],
        tactical_critique: [approve()],
      });
      const { thread, plan: stopped, outcome } = await plan(first, 'Do three parts', { budgets: { maxSteps: 6 } });
      expect(outcome.run.reason).toBe('step budget spent: 6 graph steps this run (limit 6)');
      expect(stopped?.milestones.map((milestone) => milestone.status)).toEqual(['completed', 'active', 'pending']);

      // A new process on the same database.
      await harness.close();
      const second = new ScriptedChatModel({
        tactical_plan: [tacticalPlan(step('two', ['current_time'])), tacticalPlan(step('three', ['current_time']))],
        executor_step: [execute([{ tool: 'current_time', args: { timeZone: 'UTC' } }], true, 'part two done'), execute([{ tool: 'current_time', args: { timeZone: 'Europe/Berlin' } }], true, 'part three done')],
        tactical_critique: always(approve()),
        strategic_critique: [approve()],
        text: ['All three parts are done.'],
      });
      model = second;
      harness = await openPlannerHarness(backend(), { model: () => model, place: harness.place });
      await harness.storage.agents.updateSetting(USER, thread.agentId, 'planner', {}, new Date().toISOString());
      const resumed = await resume(thread, second, stopped!.id);
      expect(resumed.outcome.run).toMatchObject({ status: 'succeeded', reason: null, trigger: 'user' });
      expect(resumed.path.slice(0, 3)).toEqual(['__start__', NODES.recall, NODES.tacticalPlanner]);
      expect(resumed.plan?.status).toBe('completed');
      expect(resumed.plan?.milestones.map((milestone) => milestone.status)).toEqual(['completed', 'completed', 'completed']);
      // Part one was not planned or run again: the second process planned two milestones only.
      expect(second.callsOf('tactical_plan')).toHaveLength(2);
      expect(JSON.stringify(second.callsOf('tactical_plan')[0]!.messages.at(-1)?.content)).toContain('Part two');
      expect(second.callsOf('knowledge_plan')).toHaveLength(0);
      expect(second.callsOf('strategic_plan')).toHaveLength(0);
      const calls = (await harness.plans.listToolCalls(USER, stopped!.id, { limit: 10 })).toolCalls;
      expect(calls.map((call) => [call.seq, call.milestoneId])).toEqual([
        [1, stopped!.milestones[0]!.id],
        [2, stopped!.milestones[1]!.id],
        [3, stopped!.milestones[2]!.id],
      ]);
      // The resume's input is internal; the person sees their request and the replies.
      const visible = await harness.storage.threads.history(USER, thread.id, { visibility: 'user', limit: 50 });
      expect(visible.messages.map((message) => message.type)).toEqual(['human', 'ai', 'ai']);
    });
  });

  it('I9: the runs above walked every edge of the planner graph', () => {
    const declared = harness.graph.getGraph().edges.map((edge) => `${edge.source}->${edge.target}`);
    expect(declared.length).toBe(22);
    const missing = declared.filter((edge) => !walked.has(edge));
    expect(missing).toEqual([]);
    expect([...walked].filter((edge) => !declared.includes(edge))).toEqual([]);
  });
}

function findFunction(value: unknown, path = '$'): string | null {
  if (typeof value === 'function') return path;
  if (value && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) {
      const found = findFunction(inner, `${path}.${key}`);
      if (found) return found;
    }
  }
  return null;
}
