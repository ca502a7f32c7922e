import { randomUUID } from 'node:crypto';
import type { BaseMessage } from '@langchain/core/messages';
import type { RunnableConfig } from '@langchain/core/runnables';
import { z } from 'zod';
import type { PlanRecord } from '../../../app/plans/plan-ports.js';
import { NO_QUERY_SOURCE_MESSAGE, skippedQueryLevel } from '../../../domain/memory-query.js';
import { recallForTurn } from '../../memory-recall.js';
import { textOf } from '../../../domain/message-content.js';
import { isSynthetic } from '../../../domain/message-metadata.js';
import { appendVisit, visitEntry } from '../../../domain/planner/loop-bounds.js';
import { emptyPlannerMetadata, heartbeatContextSchema, type MilestoneState, type PlannerMetadata } from '../../../domain/planner/planner-state.js';
import { progressOf } from '../../../domain/planner/run-bounds.js';
import { NODES, type PlannerStateValue, type PlannerUpdate } from '../planner-graph-state.js';
import type { PlannerRuntime, RunScope } from '../planner-runtime.js';

/**
 * What a synthetic input may ask of the planner, in `additional_kwargs.planner`: resume a
 * stored plan (the resume API, the overlord's heartbeat). Set by the server only — a
 * person's message never carries metadata (the API refuses it).
 */
export const plannerInputSchema = z.object({ action: z.literal('resume'), planId: z.string().min(1) });
const heartbeatInputSchema = z.object({ context: heartbeatContextSchema, decision: z.enum(['plan', 'wait', 'end']) });

/**
 * The first node of every run: resets the run's counters and budgets (they are per run;
 * the state itself lives on in the checkpoint), recalls memories, and decides the mode:
 * a person's message (or a schedule's or webhook's task) starts a new plan; a resume
 * request continues the stored plan from its tables — completed milestones are not
 * redone; another synthetic input (an idle follow-up) continues the thread's open plan,
 * or, with none, just gets an answer.
 */
export function recallNode(runtime: PlannerRuntime) {
  const { plans, memories } = runtime.deps;
  return async (state: PlannerStateValue, config: RunnableConfig): Promise<PlannerUpdate> => {
    const scope = runtime.scope(config);
    const { run } = scope;
    const settings = await runtime.settings(scope);
    const last = state.messages.at(-1);
    const kwargs = (last?.additional_kwargs ?? {}) as Record<string, unknown>;
    const heartbeat = heartbeatInputSchema.safeParse(kwargs.heartbeat);
    const runReset: Partial<PlannerMetadata> = {
      runId: run.runId,
      budgets: settings.budgets,
      maxRevisions: settings.budgets.maxRevisions,
      stepCount: 1,
      visited: [],
      sameNodeLoopCount: 1,
      maxIterationsReached: false,
      tokensUsed: 0,
      toolCallCount: 0,
      toolCallSignatures: {},
      stop: null,
      lastError: null,
      overlordDecision: heartbeat.success ? heartbeat.data.decision : null,
      heartbeatContext: heartbeat.success ? heartbeat.data.context : null,
    };

    // The planner's thread carries no conversation summary: the query comes from its messages alone.
    const recall = await recallForTurn({ memories, memoryLimit: runtime.deps.memoryLimit }, { messages: state.messages, summary: null }, run);
    let recalled: PlannerMetadata['memories'] = [];
    if (recall.memoryQuerySource === 'none') scope.log[skippedQueryLevel(run.trigger)]({ messageCount: state.messages.length, trigger: run.trigger }, NO_QUERY_SOURCE_MESSAGE);
    else {
      scope.log.debug({ querySource: recall.memoryQuerySource, query: recall.query.slice(0, 50) }, 'Memory query source selected');
      recalled = recall.recalled.map((hit) => ({ content: hit.content, relevance_score: hit.score, id: hit.id, created_at: hit.createdAt, found_by: recall.memoryQuerySource }));
    }

    let update: Partial<PlannerMetadata>;
    const isTask = !isSynthetic(kwargs) || TASK_TRIGGER_TYPES.has(String(kwargs.trigger_type));
    if (last && !isTask) {
      const request = plannerInputSchema.safeParse(kwargs.planner);
      const plan = request.success ? await plans.get(run.userId, request.data.planId) : await plans.findOpen(run.userId, run.threadId);
      if (plan && plan.threadId === run.threadId && isResumable(plan)) update = await resume(runtime, scope, plan);
      else if (request.success) {
        const reason = plan ? `plan ${plan.id} is ${plan.status}; there is nothing to resume` : `there is no plan ${request.data.planId} on this thread to resume`;
        update = { ...emptyPlanFields(), mode: 'resume', activePlanId: plan && plan.threadId === run.threadId ? plan.id : null, stop: { bound: 'nothing_to_resume', reason } };
      } else update = { ...emptyPlanFields(), mode: 'reply' }; // e.g. an idle follow-up with no plan: just answer
    } else {
      // A person's message, or a scheduled or webhook task: a new plan for it.
      // The same message again is a retry of a run that failed mid-plan: continue that plan.
      const open = last?.id ? await plans.findOpen(run.userId, run.threadId) : undefined;
      update = open && open.sourceMessageId === last?.id ? await resume(runtime, scope, open) : await startNewPlan(runtime, scope, last);
    }
    // A whole new metadata object: nothing of an earlier run leaks in (the plan itself is
    // rebuilt from its tables), and a checkpoint of an older shape cannot trip this run.
    const fresh: PlannerMetadata = { ...emptyPlannerMetadata(), ...runReset, ...update, memories: recalled };
    if (fresh.activePlanId && !fresh.stop) runtime.inWork.set(run.runId, { planId: fresh.activePlanId, userId: run.userId, threadId: run.threadId, agentId: run.agentId });
    // This node is the run's first visit: record it like every other.
    return { planner: { ...fresh, visited: appendVisit([], visitEntry(NODES.recall, progressOf(fresh))) } };
  };
}

/** Synthetic inputs that carry a task of their own (a schedule's or a webhook's), planned like a person's request. */
const TASK_TRIGGER_TYPES: ReadonlySet<string> = new Set(['cron', 'webhook']);

function isResumable(plan: PlanRecord): boolean {
  return plan.status === 'planning' || plan.status === 'active' || plan.status === 'stopped';
}

function emptyPlanFields(): Partial<PlannerMetadata> {
  return {
    activePlanId: null,
    request: '',
    strategicPlan: null,
    completedMilestoneIds: [],
    activeMilestone: null,
    tacticalPlan: null,
    executorContinue: false,
    toolResults: {},
    currentStep: 0,
    criticDecision: null,
    criticReason: null,
    finalCriticDecision: null,
    finalCriticReason: null,
    revisionCount: 0,
    strategicRevisionCount: 0,
    knowledgePlan: null,
    knowledgeResults: [],
  };
}

async function startNewPlan(runtime: PlannerRuntime, scope: RunScope, message: BaseMessage | undefined): Promise<Partial<PlannerMetadata>> {
  const request = textOf(message?.content ?? '').trim();
  const { plans, heartbeats } = runtime.deps;
  const { run } = scope;
  const open = await plans.findOpen(run.userId, run.threadId);
  if (open) {
    // A new request replaces the unfinished plan; its end is announced like any other.
    const reason = 'superseded by a new request';
    await plans.update(open.id, { status: 'superseded', reason, endedAt: scope.now(), heartbeat: open.heartbeat ? { ...open.heartbeat, status: 'ended', nextCheckAt: null } : null }, scope.now());
    runtime.emit(scope, { type: 'plan.complete', planId: open.id, status: 'stopped', reason });
    await heartbeats.disarm(run.threadId);
  }
  const plan = await plans.create({ id: randomUUID(), userId: run.userId, agentId: run.agentId, threadId: run.threadId, request: request.slice(0, 20_000), sourceMessageId: message?.id ?? null, runId: run.runId }, scope.now());
  scope.log.info({ planId: plan.id }, 'plan started');
  return { ...emptyPlanFields(), mode: 'new', activePlanId: plan.id, request: plan.request };
}

/** Rebuild the plan's state from its tables: the stored plan is the truth a resume continues from. */
async function resume(runtime: PlannerRuntime, scope: RunScope, plan: PlanRecord): Promise<Partial<PlannerMetadata>> {
  const { plans } = runtime.deps;
  // A person resuming the plan starts its heartbeats afresh (an earlier `end` was about the idle plan).
  const heartbeat = scope.run.trigger === 'user' ? { heartbeat: null } : {};
  await plans.update(plan.id, { status: plan.milestones.length > 0 ? 'active' : 'planning', reason: null, lastRunId: scope.run.runId, ...heartbeat }, scope.now());
  const milestones: MilestoneState[] = plan.milestones.map((milestone) => ({
    id: milestone.id,
    title: milestone.title,
    description: milestone.description,
    successCriteria: milestone.successCriteria,
    orderIndex: milestone.orderIndex,
  }));
  const completed = plan.milestones.filter((milestone) => milestone.status === 'completed');
  const active = plan.milestones.find((milestone) => milestone.status !== 'completed');
  scope.log.info({ planId: plan.id, completed: completed.length, total: milestones.length, activeMilestone: active?.id ?? null }, 'resuming plan');
  return {
    ...emptyPlanFields(),
    mode: 'resume',
    activePlanId: plan.id,
    request: plan.request,
    strategicPlan: plan.goal && milestones.length > 0 ? { goal: plan.goal, milestones } : null,
    completedMilestoneIds: completed.map((milestone) => milestone.id),
    activeMilestone: active ? (milestones.find((milestone) => milestone.id === active.id) ?? null) : null,
    tacticalPlan: active && active.steps.length > 0 ? { steps: active.steps } : null,
    currentStep: active ? Math.min(active.currentStep, active.steps.length) : 0,
    revisionCount: active?.revisionCount ?? 0,
    criticReason: active?.criticReason ?? null,
    strategicRevisionCount: plan.strategicRevisionCount,
    finalCriticReason: plan.finalCriticReason,
    knowledgePlan: plan.knowledge ? { queries: plan.knowledge.queries } : null,
    knowledgeResults: plan.knowledge?.results ?? [],
  };
}

/** Where a run goes after recall. */
export function routeAfterRecall(state: PlannerStateValue): string {
  const meta = state.planner;
  if (meta.stop || meta.mode === 'reply') return NODES.complete;
  if (meta.mode === 'new' || !meta.strategicPlan) return NODES.knowledge;
  if (!meta.activeMilestone) return NODES.strategicCritic;
  return meta.tacticalPlan ? NODES.executor : NODES.tacticalPlanner;
}
