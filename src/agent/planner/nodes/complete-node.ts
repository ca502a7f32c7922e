import { AIMessage, type BaseMessage } from '@langchain/core/messages';
import type { RunnableConfig } from '@langchain/core/runnables';
import type { PlanRecord } from '../../../app/plans/plan-ports.js';
import { textOf } from '../../../domain/message-content.js';
import type { PlannerMetadata } from '../../../domain/planner/planner-state.js';
import { summaryInstruction } from '../planner-prompts.js';
import type { PlannerStateValue, PlannerUpdate } from '../planner-graph-state.js';
import type { PlannerRuntime, RunScope } from '../planner-runtime.js';
import { tokensOf } from '../structured-decision.js';
import { modelCallConfig } from '../../model-call-config.js';

/**
 * The last node of every run, whatever happened — so the completion event is always
 * sent (the seed's forced stop never sent it). It writes the only message a person sees
 * from a planner run, and the only node whose tokens stream to them:
 * - completed plan: the model summarises the outcome (streamed);
 * - stopped run (a bound, a malformed answer, nothing to resume): a plain message with
 *   the reason, without another model call (the budget may be what ran out);
 * - no plan (e.g. an idle follow-up on a thread with none): the model answers.
 */
export function completeNode(runtime: PlannerRuntime) {
  const { plans, heartbeats } = runtime.deps;
  return async (state: PlannerStateValue, config: RunnableConfig): Promise<PlannerUpdate> => {
    const scope = runtime.scope(config);
    // From here this node announces the plan's end itself.
    runtime.inWork.delete(scope.run.runId);
    const meta = state.planner;
    const planId = meta.activePlanId;
    const plan = planId ? await plans.get(scope.run.userId, planId) : undefined;

    if (meta.stop) {
      scope.log.warn({ planId, bound: meta.stop.bound, reason: meta.stop.reason }, 'planner run stopped');
      const stoppable = plan && (plan.status === 'planning' || plan.status === 'active' || plan.status === 'stopped');
      if (plan && stoppable) {
        await plans.update(plan.id, { status: 'stopped', reason: meta.stop.reason, lastRunId: scope.run.runId }, scope.now());
        await armHeartbeat(runtime, scope, plan);
        runtime.emit(scope, { type: 'plan.complete', planId: plan.id, status: 'stopped', reason: meta.stop.reason });
      }
      const reply = new AIMessage({ content: stoppedText(meta, plan), response_metadata: { planner: { planId, status: 'stopped', bound: meta.stop.bound } } });
      return { messages: [reply], planner: { maxIterationsReached: true } };
    }

    const model = runtime.model(scope);
    if (meta.mode === 'reply' || !plan) {
      const input = await runtime.context.prepare(conversationState(state), scope.run, config, { recalled: recalledOf(meta) });
      const answer = await model.invoke(input.messages, modelCallConfig(config));
      input.observe(answer);
      return { messages: [asReply(answer, planId ?? null)], planner: { tokensUsed: meta.tokensUsed + tokensOf(answer, input.messages) }, ...(input.update ?? {}) };
    }

    await plans.update(plan.id, { status: 'completed', reason: meta.finalCriticReason, endedAt: scope.now(), lastRunId: scope.run.runId, heartbeat: plan.heartbeat ? { ...plan.heartbeat, status: 'ended', nextCheckAt: null } : null }, scope.now());
    await heartbeats.disarm(scope.run.threadId);
    runtime.emit(scope, { type: 'plan.complete', planId: plan.id, status: 'completed', ...(meta.finalCriticReason ? { reason: meta.finalCriticReason } : {}) });
    const outcome = {
      goal: plan.goal,
      milestones: plan.milestones.map((milestone) => ({ title: milestone.title, status: milestone.status, results: milestone.steps.map((step) => step.result).filter(Boolean) })),
      knowledge: meta.knowledgeResults.map(({ query, answer, confidence }) => ({ query, answer, confidence })),
      finalReview: meta.finalCriticReason,
    };
    const input = await runtime.context.prepare(conversationState(state), scope.run, config, { systemPrompt: summaryInstruction(scope.run.systemPrompt, outcome) });
    const answer = await model.invoke(input.messages, modelCallConfig(config));
    input.observe(answer);
    return { messages: [asReply(answer, plan.id)], planner: { tokensUsed: meta.tokensUsed + tokensOf(answer, input.messages) }, ...(input.update ?? {}) };
  };
}

async function armHeartbeat(runtime: PlannerRuntime, scope: RunScope, plan: PlanRecord): Promise<void> {
  const settings = await runtime.settings(scope);
  if (!settings.overlord.enabled || plan.heartbeat?.status === 'ended') return;
  await runtime.deps.heartbeats.arm({ userId: plan.userId, threadId: plan.threadId, planId: plan.id, agentId: plan.agentId, delayMs: settings.overlord.checkAfterMs });
}

/** The person's conversation as the model should see it: their messages and the agent's replies, with the summary of older ones. */
function conversationState(state: PlannerStateValue) {
  const messages = state.messages.filter((message) => message.getType() === 'human' || message.getType() === 'ai');
  return { messages, summary: state.summary, summaryCoverage: state.summaryCoverage };
}

/** A plain AIMessage (a streamed answer arrives as a chunk), marked with its plan. */
function asReply(answer: BaseMessage, planId: string | null): AIMessage {
  return new AIMessage({
    content: answer.content,
    ...(answer.id ? { id: answer.id } : {}),
    response_metadata: { ...(answer.response_metadata ?? {}), ...(planId ? { planner: { planId } } : {}) },
    ...(AIMessage.isInstance(answer) && answer.usage_metadata ? { usage_metadata: answer.usage_metadata } : {}),
  });
}

/** The run's recalled memories, for the data block after the rules (never prompt text). */
function recalledOf(meta: PlannerMetadata) {
  return { memories: meta.memories.map((memory, index) => ({ id: memory.id ?? `recalled-${index + 1}`, content: memory.content, createdAt: memory.created_at })), foundBy: meta.memories[0]?.found_by ?? null };
}

function stoppedText(meta: PlannerMetadata, plan: PlanRecord | undefined): string {
  const reason = meta.stop?.reason ?? 'stopped';
  if (!plan) return `I could not work on a plan: ${reason}.`;
  const total = plan.milestones.length;
  const done = plan.milestones.filter((milestone) => milestone.status === 'completed');
  const what = plan.goal ? `“${textOf(plan.goal).slice(0, 200)}”` : 'your request';
  const progress = total > 0 ? ` Done so far: ${done.length} of ${total} milestones${done.length > 0 ? ` (${done.map((milestone) => milestone.title).join('; ')})` : ''}.` : '';
  const resumable = meta.stop?.bound === 'nothing_to_resume' ? '' : ' The plan is saved and can be resumed from where it stopped.';
  return `I stopped working on ${what}: ${reason}.${progress}${resumable}`;
}
