import { afterAll, beforeAll, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { HumanMessage } from '@langchain/core/messages';
import { NO_QUERY_SOURCE_MESSAGE } from '../../src/domain/memory-query.js';
import { openPlannerHarness, USER, type PlannerHarness } from '../helpers/planner-harness.js';
import { approve, execute, noKnowledge, step, strategicPlan, tacticalPlan } from '../helpers/planner-scripts.js';
import { always, ScriptedChatModel } from '../helpers/scripted-model.js';
import type { Backend } from '../helpers/test-server.js';

/**
 * The memory-query rule holds for every trigger (seed 000): an overlord heartbeat run on a
 * thread where a person wrote searches memory with that person's last message — never
 * "Empty thread - no query source available" — and the recalled memory carries where it
 * came from.
 */
export function heartbeatRecallSuite(backend: () => Backend): void {
  let harness: PlannerHarness;
  let model = new ScriptedChatModel();

  beforeAll(async () => {
    harness = await openPlannerHarness(backend(), { model: () => model });
  });
  afterAll(async () => {
    await harness?.destroy();
  });

  function gardenScript() {
    return new ScriptedChatModel({
      knowledge_plan: always(noKnowledge),
      strategic_plan: always(strategicPlan('Plan the garden', 'Choose plants', 'Plant them')),
      tactical_plan: always(tacticalPlan(step('do it'))),
      executor_step: always(execute([], true, 'done')),
      tactical_critique: always(approve()),
      strategic_critique: always(approve()),
      text: always('Here is where the garden stands.'),
    });
  }

  async function heartbeatOn(planThreadId: string) {
    const plan = (await harness.plans.listByThread(USER, planThreadId, { limit: 1 }))[0]!;
    const outcome = await harness.service.runHeartbeat(plan, { context: { idleTime: 3_600_000, lastActivity: 'agent_run', priority: 'medium' }, reason: 'idle plan with work left' });
    if ('declined' in outcome) throw new Error(`the heartbeat run was declined: ${outcome.declined}`);
    return harness.logs.filter((line) => line.runId === outcome.run.id);
  }

  it('I2: a heartbeat run on a thread nobody wrote in skips retrieval with a logged reason, at info: its synthetic prompts are never a query', async () => {
    model = gardenScript();
    const agent = await harness.agent({ budgets: { maxSteps: 6 } });
    const thread = await harness.thread(agent);
    await harness.send(thread, new HumanMessage({ id: randomUUID(), content: 'Plan the garden (scheduled)', additional_kwargs: { synthetic: true, trigger_type: 'cron' } }), 'cron');
    await harness.storage.agents.updateSetting(USER, agent.id, 'planner', {}, new Date().toISOString());
    const lines = await heartbeatOn(thread.id);
    expect(lines.filter((line) => line.msg === NO_QUERY_SOURCE_MESSAGE).map((line) => [line.level, line.trigger])).toEqual([[30, 'heartbeat']]);
    expect(lines.some((line) => line.msg === 'Memory query source selected')).toBe(false);
  });

  it('I2: a heartbeat run recalls memory with the last real user message, not the synthetic heartbeat prompt', async () => {
    model = gardenScript();
    const agent = await harness.agent({ budgets: { maxSteps: 6 } });
    const thread = await harness.thread(agent);
    const memory = await harness.storage.memories.add({ userId: USER, agentId: agent.id }, { id: randomUUID(), content: 'The garden gets tomatoes and basil', origin: { by: 'api' } }, new Date().toISOString());
    const first = await harness.say(thread, 'Plan the garden with tomatoes');
    expect(first.run.reason).toMatch(/^step budget spent/);
    await harness.storage.agents.updateSetting(USER, agent.id, 'planner', {}, new Date().toISOString());
    const lines = await heartbeatOn(thread.id);
    expect(lines.some((line) => line.msg === NO_QUERY_SOURCE_MESSAGE)).toBe(false);
    expect(lines.find((line) => line.msg === 'Memory query source selected')).toMatchObject({ querySource: 'last_real_user_message', query: 'Plan the garden with tomatoes' });
    const { planner } = await harness.state(thread.id);
    expect(planner.memories).toEqual([expect.objectContaining({ id: memory.id, content: memory.content, found_by: 'last_real_user_message' })]);
  });
}
