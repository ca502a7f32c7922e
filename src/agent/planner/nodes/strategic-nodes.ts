import { randomUUID } from 'node:crypto';
import { strategicCritique, strategicPlanDecision } from '../../../domain/planner/planner-decisions.js';
import type { MilestoneState, PlannerMetadata } from '../../../domain/planner/planner-state.js';
import { malformedStop, revisionCapStop } from '../../../domain/planner/run-bounds.js';
import type { PlannerUpdate } from '../planner-graph-state.js';
import type { PlannerRuntime, RunScope } from '../planner-runtime.js';
import { decide } from '../structured-decision.js';

/**
 * The strategic planner: the goal and its ordered milestones, stored in the plan's
 * tables (the first plan, or after a strategic revision — completed milestones are kept
 * and the new ones follow them).
 */
export function strategicPlannerNode(runtime: PlannerRuntime) {
  const { plans } = runtime.deps;
  return async (meta: PlannerMetadata, scope: RunScope): Promise<PlannerUpdate> => {
    const planId = meta.activePlanId!;
    const revising = meta.finalCriticDecision === 'revise';
    const completed = (meta.strategicPlan?.milestones ?? []).filter((milestone) => meta.completedMilestoneIds.includes(milestone.id));
    const toolbox = await runtime.toolbox(scope);
    const context = {
      request: meta.request,
      memories: meta.memories.map((memory) => memory.content),
      knowledge: meta.knowledgeResults,
      tools: toolbox.descriptors.map((tool) => tool.name),
      ...(revising ? { goal: meta.strategicPlan?.goal, completedMilestones: completed.map(({ title, successCriteria }) => ({ title, successCriteria })), criticReason: meta.finalCriticReason } : {}),
    };
    const answer = await decide(runtime.model(scope), strategicPlanDecision, 'strategic_plan', runtime.decisionInput(scope, revising ? 'strategic_revision' : 'strategic_plan', context, { name: 'strategic_plan', schema: strategicPlanDecision }), {
      retries: meta.budgets.structuredRetries,
      config: scope.config,
    });
    const tokensUsed = meta.tokensUsed + answer.tokens;
    if (!answer.ok) return { planner: { tokensUsed, stop: malformedStop('strategic plan', answer.attempts, answer.error) } };
    const { goal, priority, milestones } = answer.value;
    const stored = await plans.replacePendingMilestones(planId, milestones.map((milestone) => ({ id: randomUUID(), ...milestone })), scope.now());
    const all: MilestoneState[] = stored.map(({ id, title, description, successCriteria, orderIndex }) => ({ id, title, description, successCriteria, orderIndex }));
    const first = stored.find((milestone) => milestone.status !== 'completed');
    await plans.update(planId, { status: 'active', goal: revising ? (meta.strategicPlan?.goal ?? goal) : goal, priority }, scope.now());
    if (first) await plans.updateMilestone(planId, first.id, { status: 'active' }, scope.now());
    const planGoal = revising ? (meta.strategicPlan?.goal ?? goal) : goal;
    // Sent again after a strategic revision, with the revised list.
    runtime.emit(scope, { type: 'plan.create', planId, goal: planGoal, milestones: all.map(({ id, title }) => ({ id, title })) });
    return {
      planner: {
        tokensUsed,
        strategicPlan: { goal: planGoal, milestones: all },
        activeMilestone: all.find((milestone) => milestone.id === first?.id) ?? null,
        tacticalPlan: null,
        currentStep: 0,
        revisionCount: 0,
        criticDecision: null,
        criticReason: null,
        finalCriticDecision: null,
        toolResults: {},
        executorContinue: false,
      },
    };
  };
}

/** The strategic critic: final approve, or revise (back to the strategic planner) until the cap auto-approves. */
export function strategicCriticNode(runtime: PlannerRuntime) {
  const { plans } = runtime.deps;
  return async (meta: PlannerMetadata, scope: RunScope): Promise<PlannerUpdate> => {
    const planId = meta.activePlanId!;
    const plan = await plans.get(scope.run.userId, planId);
    const context = {
      request: meta.request,
      goal: meta.strategicPlan?.goal,
      milestones: (plan?.milestones ?? []).map((milestone) => ({
        title: milestone.title,
        successCriteria: milestone.successCriteria,
        status: milestone.status,
        criticReason: milestone.criticReason,
        results: milestone.steps.map((step) => step.result).filter((result): result is string => result !== null),
      })),
      knowledge: meta.knowledgeResults,
    };
    const answer = await decide(runtime.model(scope), strategicCritique, 'strategic_critique', runtime.decisionInput(scope, 'strategic_critique', context, { name: 'strategic_critique', schema: strategicCritique }), {
      retries: meta.budgets.structuredRetries,
      config: scope.config,
    });
    const tokensUsed = meta.tokensUsed + answer.tokens;
    if (!answer.ok) return { planner: { tokensUsed, stop: malformedStop('strategic critique', answer.attempts, answer.error) } };
    const { decision, reason } = answer.value;
    const atCap = decision === 'revise' && meta.strategicRevisionCount >= meta.maxRevisions;
    const strategicRevisionCount = decision === 'revise' && !atCap ? meta.strategicRevisionCount + 1 : meta.strategicRevisionCount;
    await plans.update(planId, { strategicRevisionCount, finalCriticReason: reason }, scope.now());
    runtime.emit(scope, { type: 'critic.decide', planId, level: 'strategic', decision, reason });
    scope.log.info({ planId, decision, reason }, 'strategic critic decided');
    if (atCap) return { planner: { tokensUsed, finalCriticDecision: decision, finalCriticReason: reason, stop: revisionCapStop('strategic', meta.maxRevisions, reason) } };
    return { planner: { tokensUsed, finalCriticDecision: decision, finalCriticReason: reason, strategicRevisionCount } };
  };
}
