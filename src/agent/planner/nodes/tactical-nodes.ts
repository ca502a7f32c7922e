import { randomUUID } from 'node:crypto';
import type { ApprovalRecord } from '../../../domain/tools/approval.js';
import { approvalTimeoutFor, isAttended } from '../../../domain/tools/tool-settings.js';
import { awaitStepApproval, unaskableCall } from '../../tools/tool-approval.js';
import { executorDecision, tacticalCritique, tacticalPlanDecision } from '../../../domain/planner/planner-decisions.js';
import type { PlannerMetadata, TacticalStepState } from '../../../domain/planner/planner-state.js';
import { malformedStop, revisionCapStop } from '../../../domain/planner/run-bounds.js';
import { toolsForPrompt } from '../planner-prompts.js';
import type { PlannerUpdate } from '../planner-graph-state.js';
import type { PlannerRuntime, PlannerToolCall, RunScope } from '../planner-runtime.js';
import { decide } from '../structured-decision.js';

/** The tactical planner: steps for the active milestone (again after a revise), each with its tools and expected outcome. */
export function tacticalPlannerNode(runtime: PlannerRuntime) {
  const { plans } = runtime.deps;
  return async (meta: PlannerMetadata, scope: RunScope): Promise<PlannerUpdate> => {
    const planId = meta.activePlanId!;
    const milestone = meta.activeMilestone!;
    const toolbox = await runtime.toolbox(scope);
    const revising = meta.criticDecision === 'revise';
    const schema = tacticalPlanDecision.superRefine((plan, context) => {
      // A step may only name tools that exist: an unknown name is a malformed answer.
      const unknown = [...new Set(plan.steps.flatMap((step) => step.tools).filter((name) => !toolbox.has(name)))];
      if (unknown.length > 0) context.addIssue({ code: 'custom', path: ['steps'], message: `unknown tools: ${unknown.join(', ')}` });
    });
    const context = {
      goal: meta.strategicPlan?.goal,
      milestone: { title: milestone.title, description: milestone.description, successCriteria: milestone.successCriteria },
      knowledge: meta.knowledgeResults,
      tools: toolsForPrompt(toolbox.descriptors),
      ...(revising ? { previousSteps: meta.tacticalPlan?.steps ?? [], criticReason: meta.criticReason, revision: meta.revisionCount } : {}),
    };
    const answer = await decide(runtime.model(scope), schema, 'tactical_plan', runtime.decisionInput(scope, 'tactical_plan', context, { name: 'tactical_plan', schema }), {
      retries: meta.budgets.structuredRetries,
      config: scope.config,
    });
    const tokensUsed = meta.tokensUsed + answer.tokens;
    if (!answer.ok) return { planner: { tokensUsed, stop: malformedStop('tactical plan', answer.attempts, answer.error) } };
    const steps: TacticalStepState[] = answer.value.steps.map((step) => ({ ...step, status: 'pending', result: null }));
    await plans.updateMilestone(planId, milestone.id, { status: 'active', steps, currentStep: 0, revisionCount: meta.revisionCount }, scope.now());
    return { planner: { tokensUsed, tacticalPlan: { steps }, currentStep: 0, executorContinue: false, toolResults: {}, criticDecision: null } };
  };
}

/**
 * The tactical executor: one visit works on the current step — the model gives the tool
 * calls, the calls are made and recorded — and either finishes the step (then the
 * tactical critic always reviews it) or stays on it (a self-loop, bounded by the
 * same-node limit). It never ends the graph: its only edges are itself, the critic, and
 * — when a bound stops the run — `complete`.
 *
 * Calls whose approval policy is `ask` (I16) take two visits: the first keeps the model's
 * answer in state (`pendingToolCalls`) and loops; the second asks for the decisions through
 * the approval gate the chat agents use, waits with interrupt() (the run ends
 * `interrupted`), and — resumed once every call is decided — runs exactly the kept calls,
 * each approved one once with exactly the approved arguments, without asking the model again.
 */
export function executorNode(runtime: PlannerRuntime) {
  const { plans } = runtime.deps;
  return async (meta: PlannerMetadata, scope: RunScope): Promise<PlannerUpdate> => {
    const planId = meta.activePlanId!;
    const milestone = meta.activeMilestone!;
    const steps = [...(meta.tacticalPlan?.steps ?? [])];
    const index = meta.currentStep;
    const step = steps[index];
    if (!step) {
      // Nothing planned is left: the critic decides (a "continue" here goes round without progress).
      return { planner: { executorContinue: false, pendingToolCalls: null } };
    }
    if (step.status === 'pending') {
      steps[index] = { ...step, status: 'running' };
      runtime.emit(scope, { type: 'step.start', planId, milestoneId: milestone.id, stepIndex: index, description: step.description });
    }
    const toolbox = await runtime.toolbox(scope);
    const where = { planId, milestoneId: milestone.id, stepIndex: index };
    const pending = meta.pendingToolCalls;
    let tokensUsed = meta.tokensUsed;
    let answer: { calls: PlannerToolCall[]; done: boolean; result: string };
    let decisions: ReadonlyMap<string, ApprovalRecord> | undefined;
    if (pending && pending.planId === planId && pending.milestoneId === milestone.id && pending.stepIndex === index) {
      // The kept answer: wait for the decisions (interrupt() while any is pending), then run it.
      runtime.inWork.set(scope.run.runId, { planId, userId: scope.run.userId, threadId: scope.run.threadId, agentId: scope.run.agentId });
      const asks = pending.calls.filter((call) => call.ask);
      const gate = runtime.deps.approvals;
      if (gate && asks.length > 0) {
        decisions = await awaitStepApproval(
          gate,
          {
            run: scope.run,
            step: pending.step,
            stepInInterrupt: true,
            attended: isAttended(scope.run.trigger),
            calls: asks.map((call) => ({ toolCallId: call.id, tool: call.tool, args: call.args, timeoutMs: call.timeoutMs })),
          },
          scope.log,
        );
      }
      answer = { calls: pending.calls, done: pending.done, result: pending.result };
    } else {
      const offered = step.tools.length > 0 ? toolbox.descriptors.filter((tool) => step.tools.includes(tool.name)) : toolbox.descriptors;
      const earlier = Object.values(meta.toolResults).filter((result) => result.stepIndex === index);
      const context = {
        goal: meta.strategicPlan?.goal,
        milestone: { title: milestone.title, successCriteria: milestone.successCriteria },
        step: { index, description: step.description, expectedOutcome: step.expectedOutcome },
        previousSteps: steps.slice(0, index).map((done) => ({ description: done.description, status: done.status, result: done.result })),
        callsSoFarForThisStep: earlier,
        tools: toolsForPrompt(offered),
      };
      const decided = await decide(runtime.model(scope), executorDecision, 'executor_step', runtime.decisionInput(scope, 'executor', context, { name: 'executor_step', schema: executorDecision }), {
        retries: meta.budgets.structuredRetries,
        config: scope.config,
      });
      tokensUsed += decided.tokens;
      if (!decided.ok) {
        await plans.updateMilestone(planId, milestone.id, { steps, currentStep: index }, scope.now());
        return { planner: { tokensUsed, tacticalPlan: { steps }, pendingToolCalls: null, stop: malformedStop('executor answer', decided.attempts, decided.error) } };
      }
      const policy = await runtime.toolSettings(scope);
      const attended = isAttended(scope.run.trigger);
      const calls = decided.value.calls.map((call) => {
        const ask = toolbox.has(call.tool) && runtime.toolMode(scope, policy, call.tool) === 'ask';
        // As in the chat tool loop: a call whose arguments do not fit its tool is answered with
        // the schema's complaint, never put to a person (who could only approve a failure).
        const refusal = ask ? unaskableCall(toolbox, call.tool, call.args) : null;
        return { id: randomUUID(), tool: call.tool, args: call.args, ask: ask && refusal === null, ...(refusal !== null ? { refusal } : {}), timeoutMs: approvalTimeoutFor(policy, call.tool, attended) };
      });
      if (calls.some((call) => call.ask)) {
        // Kept in the checkpoint before anyone is asked: the next visit waits for the decisions.
        await plans.updateMilestone(planId, milestone.id, { steps, currentStep: index }, scope.now());
        scope.log.info({ tools: calls.filter((call) => call.ask).map((call) => call.tool) }, 'planner tool calls need a person\'s approval');
        return {
          planner: {
            tokensUsed,
            tacticalPlan: { steps },
            executorContinue: true,
            pendingToolCalls: { step: `plan-step:${randomUUID()}`, ...where, calls, done: decided.value.done, result: decided.value.result },
          },
        };
      }
      answer = { calls: calls.map(({ tool, args, refusal }) => ({ tool, args, ...(refusal !== undefined ? { refusal } : {}) })), done: decided.value.done, result: decided.value.result };
    }
    const called = await runtime.callTools(scope, meta, toolbox, answer.calls, where, decisions);
    if (called.stop) {
      await plans.updateMilestone(planId, milestone.id, { steps, currentStep: index }, scope.now());
      return { planner: { tokensUsed, ...called.updates, tacticalPlan: { steps }, pendingToolCalls: null, stop: called.stop } };
    }
    let currentStep = index;
    let executorContinue = true;
    if (answer.done) {
      const failed = called.outcomes.length > 0 && called.outcomes.every((outcome) => !outcome.ok);
      steps[index] = { ...steps[index]!, status: failed ? 'failed' : 'done', result: answer.result };
      runtime.emit(scope, { type: 'step.end', planId, milestoneId: milestone.id, stepIndex: index, status: failed ? 'failed' : 'succeeded', summary: answer.result.slice(0, 500) });
      currentStep = index + 1;
      executorContinue = false;
    }
    await plans.updateMilestone(planId, milestone.id, { steps, currentStep }, scope.now());
    return { planner: { tokensUsed, ...called.updates, tacticalPlan: { steps }, currentStep, executorContinue, pendingToolCalls: null } };
  };
}

/**
 * The tactical critic, after every finished step: approve (the milestone is done: on to
 * the next milestone, or the strategic critic after the last), revise (re-plan the steps;
 * a revise at the revision cap stops the run: the milestone was never approved), or continue (on
 * with the planned steps).
 */
export function tacticalCriticNode(runtime: PlannerRuntime) {
  const { plans } = runtime.deps;
  return async (meta: PlannerMetadata, scope: RunScope): Promise<PlannerUpdate> => {
    const planId = meta.activePlanId!;
    const milestone = meta.activeMilestone!;
    const steps = meta.tacticalPlan?.steps ?? [];
    const context = {
      goal: meta.strategicPlan?.goal,
      milestone: { title: milestone.title, description: milestone.description, successCriteria: milestone.successCriteria },
      steps: steps.map(({ description, expectedOutcome, status, result }) => ({ description, expectedOutcome, status, result })),
      remainingSteps: Math.max(0, steps.length - meta.currentStep),
      toolResults: Object.values(meta.toolResults),
      revision: meta.revisionCount,
    };
    const answer = await decide(runtime.model(scope), tacticalCritique, 'tactical_critique', runtime.decisionInput(scope, 'tactical_critique', context, { name: 'tactical_critique', schema: tacticalCritique }), {
      retries: meta.budgets.structuredRetries,
      config: scope.config,
    });
    const tokensUsed = meta.tokensUsed + answer.tokens;
    if (!answer.ok) return { planner: { tokensUsed, stop: malformedStop('tactical critique', answer.attempts, answer.error) } };
    const { decision, reason } = answer.value;
    const atCap = decision === 'revise' && meta.revisionCount >= meta.maxRevisions;
    const revisionCount = decision === 'revise' && !atCap ? meta.revisionCount + 1 : meta.revisionCount;
    runtime.emit(scope, { type: 'critic.decide', planId, level: 'tactical', decision, reason });
    scope.log.info({ planId, milestoneId: milestone.id, decision, reason }, 'tactical critic decided');
    if (decision !== 'approve') {
      await plans.updateMilestone(planId, milestone.id, { criticDecision: decision, criticReason: reason, revisionCount }, scope.now());
      const stop = atCap ? revisionCapStop('tactical', meta.maxRevisions, reason) : null;
      return { planner: { tokensUsed, criticDecision: decision, criticReason: reason, revisionCount, ...(stop ? { stop } : {}) } };
    }
    await plans.updateMilestone(planId, milestone.id, { status: 'completed', criticDecision: decision, criticReason: reason, revisionCount, completedAt: scope.now() }, scope.now());
    const completedMilestoneIds = [...meta.completedMilestoneIds, milestone.id];
    const next = (meta.strategicPlan?.milestones ?? []).find((candidate) => !completedMilestoneIds.includes(candidate.id)) ?? null;
    if (next) await plans.updateMilestone(planId, next.id, { status: 'active' }, scope.now());
    return {
      planner: {
        tokensUsed,
        criticDecision: decision,
        criticReason: reason,
        completedMilestoneIds,
        activeMilestone: next,
        tacticalPlan: null,
        currentStep: 0,
        revisionCount: 0,
        toolResults: {},
        executorContinue: false,
      },
    };
  };
}
