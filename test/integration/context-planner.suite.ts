import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { HumanMessage } from '@langchain/core/messages';
import { syntheticMetadata, TRIGGER_PROMPTS } from '../../src/domain/message-metadata.js';
import { textOf } from '../../src/domain/message-content.js';
import { TokenCounter } from '../../src/agent/context/token-counter.js';
import { openPlannerHarness, USER, type PlannerHarness } from '../helpers/planner-harness.js';
import { approve, execute, noKnowledge, step, strategicPlan, tacticalPlan } from '../helpers/planner-scripts.js';
import { always, ScriptedChatModel } from '../helpers/scripted-model.js';
import type { Backend } from '../helpers/test-server.js';

/**
 * I14 in the planner: every model call of a run — each decision (knowledge, strategic,
 * tactical, executor, critics) and the final reply — fits the agent's context budget,
 * even when the person's request alone is several times larger than the budget; the
 * request is kept whole in history.
 */
export function contextPlannerSuite(backend: () => Backend): void {
  const BUDGET = 3000;
  const counter = new TokenCounter();
  let harness: PlannerHarness;
  let model = new ScriptedChatModel();

  beforeAll(async () => {
    harness = await openPlannerHarness(backend(), { model: () => model });
  });
  afterAll(async () => {
    await harness?.destroy();
  });

  /** A plan of one step that runs, is approved at every level, and answers `reply`. */
  function oneStepPlan(goal: string, steps: string[], reply: string | ReturnType<typeof always>) {
    return new ScriptedChatModel({
      knowledge_plan: [noKnowledge],
      strategic_plan: [strategicPlan(goal, ...steps)],
      tactical_plan: always(tacticalPlan(step('do it'))),
      executor_step: always(execute([], true, 'done')),
      tactical_critique: always(approve()),
      strategic_critique: always(approve()),
      text: typeof reply === 'string' ? [reply] : reply,
    });
  }

  it('I14: every planner decision and the final reply fit the budget; the oversized request stays whole in history', async () => {
    model = oneStepPlan('Sort the garden notes', ['Read them', 'Sum them up'], 'Sorted.');
    const agent = await harness.agent();
    await harness.storage.agents.updateSetting(USER, agent.id, 'context', { maxTokens: BUDGET }, new Date().toISOString());
    const thread = await harness.thread(agent);
    const request = `Please sort my garden notes. ${'The roses need pruning in March and the tomatoes want sun; '.repeat(900)}`;
    expect(counter.text(request)).toBeGreaterThan(BUDGET * 3);

    const outcome = await harness.say(thread, request);
    expect(outcome.run.status).toBe('succeeded');
    const inputLimit = BUDGET - 600; // a fifth of the budget is the answer's room
    const names = new Set<string>();
    for (const call of model.calls) {
      names.add(call.name);
      const tokens = call.messages.reduce((sum, message) => sum + counter.message(message).tokens, 0);
      expect(tokens, call.name).toBeLessThanOrEqual(inputLimit);
    }
    expect([...names].sort()).toEqual(['knowledge_plan', 'strategic_critique', 'strategic_plan', 'tactical_critique', 'tactical_plan', 'executor_step', 'text'].sort());
    expect(harness.logs.some((line) => line.msg === 'decision input over the context budget; its context is cut to fit')).toBe(true);

    // Nothing was cut in history: the person's message is there whole (I14).
    const state = await harness.state(thread.id);
    const first = state.messages[0] as unknown as { content: unknown };
    expect(first.content).toBe(request);
  });

  it('I14: recalled memories far larger than the budget are fitted: every planner call, the final reply included, stays within it', async () => {
    model = oneStepPlan('Water the orchids', ['Check the soil'], always('Watered.'));
    const agent = await harness.agent();
    await harness.storage.agents.updateSetting(USER, agent.id, 'context', { maxTokens: BUDGET }, new Date().toISOString());
    for (let index = 0; index < 5; index++) {
      const content = `orchids ${index}: ${'the orchids like rain water, bark and bright shade; '.repeat(90)}`;
      await harness.storage.memories.add({ userId: USER, agentId: agent.id }, { id: randomUUID(), content, origin: { by: 'api' } }, new Date().toISOString());
    }
    const thread = await harness.thread(agent);
    expect((await harness.say(thread, 'How should I water the orchids?')).run.status).toBe('succeeded');
    // An idle follow-up with no open plan just answers: its reply call carries the recalled memories (complete node).
    const followUp = new HumanMessage({ id: randomUUID(), content: TRIGGER_PROMPTS.check_in, additional_kwargs: syntheticMetadata('check_in', 'idle') });
    const followed = await harness.send(thread, followUp, 'autonomy');
    expect(followed.run.status).toBe('succeeded');
    const replies = model.calls.filter((call) => call.name === 'text');
    expect(String(replies.at(-1)!.messages[0]!.content)).toContain('<recalled_memories>');
    for (const call of model.calls) {
      const tokens = call.messages.reduce((sum, message) => sum + counter.message(message).tokens, 0);
      expect(tokens, call.name).toBeLessThanOrEqual(BUDGET - 600);
    }
  });

  it("I14: a planner decision's output schema is input too (providers send it as a tool definition): with a small budget, every decision's messages and schema stay within it", async () => {
    const SMALL = 1500;
    model = oneStepPlan('Sort the seed packets', ['Read them', 'Sum them up'], 'Sorted.');
    const agent = await harness.agent();
    await harness.storage.agents.updateSetting(USER, agent.id, 'context', { maxTokens: SMALL }, new Date().toISOString());
    const thread = await harness.thread(agent);
    // The request fills each decision's context to its bound: only the schema's tokens can push a call over.
    const outcome = await harness.say(thread, `Please sort my seed packets. ${'Beans, peas, carrots and kale from last spring; '.repeat(400)}`);
    expect(outcome.run.status).toBe('succeeded');
    const inputLimit = SMALL - 300; // a fifth of the budget is the answer's room
    const decisions = model.calls.filter((call) => call.name !== 'text');
    expect(decisions.length).toBeGreaterThanOrEqual(6);
    for (const call of decisions) {
      expect(call.tools.map((tool) => tool.name), call.name).toEqual([call.name]);
      const schemaTokens = counter.tools(call.tools);
      expect(schemaTokens, call.name).toBeGreaterThan(0);
      const tokens = call.messages.reduce((sum, message) => sum + counter.message(message).tokens, 0);
      expect(tokens + schemaTokens, call.name).toBeLessThanOrEqual(inputLimit);
    }
  });

  it("I14: a structured decision's retry after an answer that does not fit the schema stays within the context budget", async () => {
    const SMALL = 1500;
    // Two answers that do not fit the schema before a valid one: the retries carry the
    // corrections ("That answer was not a valid …"), the second one both of them.
    const badPlan = { goal: 42, priority: 'sometime', milestones: 'first the beans, then the kale' };
    model = new ScriptedChatModel({
      knowledge_plan: [noKnowledge],
      strategic_plan: [badPlan, 'Here is my plan: sort them by colour.', strategicPlan('Sort the seed packets', 'Sort them')],
      tactical_plan: ['prose', tacticalPlan(step('do it'))],
      executor_step: always(execute([], true, 'done')),
      tactical_critique: always(approve()),
      strategic_critique: always(approve()),
      text: ['Sorted.'],
    });
    const agent = await harness.agent();
    await harness.storage.agents.updateSetting(USER, agent.id, 'context', { maxTokens: SMALL }, new Date().toISOString());
    const thread = await harness.thread(agent);
    // The request fills each decision's context to its bound: a correction appended after the fit would push the retry over.
    const outcome = await harness.say(thread, `Please sort my seed packets. ${'Beans, peas, carrots and kale from last spring; '.repeat(400)}`);
    expect(outcome.run.status).toBe('succeeded');
    const strategic = model.callsOf('strategic_plan');
    expect(strategic).toHaveLength(3);
    expect(model.callsOf('tactical_plan')).toHaveLength(2);
    // The retries did carry their corrections, after the context.
    expect(textOf(strategic[1]!.messages.at(-1)!.content)).toMatch(/^That answer was not a valid strategic_plan:/);
    expect(strategic[2]!.messages.filter((message) => /^That answer was not a valid strategic_plan:/.test(textOf(message.content)))).toHaveLength(2);
    const inputLimit = SMALL - 300; // a fifth of the budget is the answer's room
    for (const call of model.calls.filter((each) => each.name !== 'text')) {
      const tokens = call.messages.reduce((sum, message) => sum + counter.message(message).tokens, 0) + counter.tools(call.tools);
      expect(tokens, `${call.name} call ${call.index}`).toBeLessThanOrEqual(inputLimit);
    }
  });
}
