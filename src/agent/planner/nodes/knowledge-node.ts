import { knowledgeAnswersDecision, knowledgePlanDecision } from '../../../domain/planner/planner-decisions.js';
import type { PlannerMetadata } from '../../../domain/planner/planner-state.js';
import { malformedStop } from '../../../domain/planner/run-bounds.js';
import { toolsForPrompt } from '../planner-prompts.js';
import type { PlannerUpdate } from '../planner-graph-state.js';
import type { PlannerRuntime, RunScope } from '../planner-runtime.js';
import { decide } from '../structured-decision.js';

/**
 * The knowledge layer (seed 003 knowledgePlan / knowledgeResults): before strategic
 * planning, list what needs finding out, look it up in memory and with tools, and answer
 * each question with its sources and a confidence. No questions → no second model call.
 */
export function knowledgeNode(runtime: PlannerRuntime) {
  const { plans, memories } = runtime.deps;
  return async (meta: PlannerMetadata, scope: RunScope): Promise<PlannerUpdate> => {
    const { run } = scope;
    const { request } = meta;
    const planId = meta.activePlanId!;
    const model = runtime.model(scope);
    const toolbox = await runtime.toolbox(scope);
    // Gathering knowledge never waits for a person: tools that need approval (I16) are not offered here, and a call to one is refused.
    const policy = await runtime.toolSettings(scope);
    const needsApproval = (tool: string) => runtime.toolMode(scope, policy, tool) === 'ask';
    const offered = toolbox.descriptors.filter((tool) => !needsApproval(tool.name));
    const retries = meta.budgets.structuredRetries;
    const asked = await decide(
      model,
      knowledgePlanDecision,
      'knowledge_plan',
      runtime.decisionInput(scope, 'knowledge_plan', { request, memories: meta.memories.map((memory) => memory.content), tools: toolsForPrompt(offered) }, { name: 'knowledge_plan', schema: knowledgePlanDecision }),
      { retries, config: scope.config },
    );
    let tokensUsed = meta.tokensUsed + asked.tokens;
    if (!asked.ok) return { planner: { tokensUsed, stop: malformedStop('knowledge plan', asked.attempts, asked.error) } };
    const queries = [...asked.value.queries].sort((a, b) => b.priority - a.priority);
    const knowledgePlan = { queries: queries.map(({ question, sources, priority }) => ({ question, sources, priority })) };
    if (queries.length === 0) {
      await plans.update(planId, { knowledge: { queries: [], results: [] } }, scope.now());
      return { planner: { tokensUsed, knowledgePlan, knowledgeResults: [] } };
    }

    const evidence: Array<{ question: string; memory: string[]; tool: { name: string; ok: boolean; output: string } | null }> = [];
    let toolUpdates: Partial<PlannerMetadata> = {};
    let current = meta;
    for (const query of queries) {
      const memory = query.sources.includes('memory')
        ? (await memories.search({ userId: run.userId, agentId: run.agentId }, query.question, { limit: 3 })).map((hit) => hit.content)
        : [];
      let tool: { name: string; ok: boolean; output: string } | null = null;
      if (query.toolCall) {
        const called = await runtime.callTools(scope, current, toolbox, [{ ...query.toolCall, ask: needsApproval(query.toolCall.tool) }], { planId, milestoneId: null, stepIndex: null });
        toolUpdates = called.updates;
        current = { ...current, ...called.updates };
        if (called.stop) return { planner: { tokensUsed, knowledgePlan, ...toolUpdates, stop: called.stop } };
        const outcome = called.outcomes[0];
        if (outcome) tool = { name: outcome.tool, ok: outcome.ok, output: outcome.output };
      }
      evidence.push({ question: query.question, memory, tool });
    }
    const answered = await decide(
      model,
      knowledgeAnswersDecision,
      'knowledge_answers',
      runtime.decisionInput(scope, 'knowledge_answers', { request, evidence }, { name: 'knowledge_answers', schema: knowledgeAnswersDecision }),
      { retries, config: scope.config },
    );
    tokensUsed += answered.tokens;
    if (!answered.ok) return { planner: { tokensUsed, knowledgePlan, ...toolUpdates, stop: malformedStop('knowledge answers', answered.attempts, answered.error) } };
    const knowledgeResults = answered.value.results;
    await plans.update(planId, { knowledge: { queries: knowledgePlan.queries, results: knowledgeResults } }, scope.now());
    return { planner: { tokensUsed, knowledgePlan, knowledgeResults, ...toolUpdates } };
  };
}
