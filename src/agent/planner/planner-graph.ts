import { END, isGraphInterrupt, START, StateGraph } from '@langchain/langgraph';
import type { RunnableConfig } from '@langchain/core/runnables';
import { STOPPING_REASON } from '../../app/run-coordinator.js';
import type { AgentGraph, RegisteredGraph } from '../agent-graph.js';
import { plannerSettingsOf } from '../../domain/planner/planner-settings.js';
import type { PlannerMetadata } from '../../domain/planner/planner-state.js';
import { checkVisit } from '../../domain/planner/run-bounds.js';
import { NODES, PlannerState, type PlannerNode, type PlannerStateValue, type PlannerUpdate } from './planner-graph-state.js';
import { PlannerRuntime, type PlannerGraphDependencies, type RunScope } from './planner-runtime.js';
import { completeNode } from './nodes/complete-node.js';
import { knowledgeNode } from './nodes/knowledge-node.js';
import { recallNode, routeAfterRecall } from './nodes/recall-node.js';
import { strategicCriticNode, strategicPlannerNode } from './nodes/strategic-nodes.js';
import { executorNode, tacticalCriticNode, tacticalPlannerNode } from './nodes/tactical-nodes.js';

export { NODES } from './planner-graph-state.js';
export type { PlannerGraphDependencies } from './planner-runtime.js';

/** LangGraph's own recursion limit sits above the largest step budget, so ours always stops first, with a reason. */
const RECURSION_LIMIT = 1_100;

/**
 * The planner graph (seed 003), every edge:
 *
 *   START → recall_memories
 *   recall_memories → gather_knowledge (new plan) | tactical_planner | tactical_executor | strategic_critic (resume) | complete (no plan, or stop)
 *   gather_knowledge → strategic_planner | complete (stop)
 *   strategic_planner → tactical_planner | complete (stop)
 *   tactical_planner → tactical_executor | complete (stop)
 *   tactical_executor → tactical_executor (step not done) | tactical_critic (step done, or nothing left) | complete (stop)
 *   tactical_critic → tactical_executor (continue) | tactical_planner (revise; approve with a next milestone) | strategic_critic (approve, last milestone) | complete (stop)
 *   strategic_critic → strategic_planner (revise) | complete (approve, or stop)
 *   complete → END
 *
 * Every node but recall and complete runs behind the same guard (I9), and every stop
 * goes to `complete`, which always runs: the run ends normally with its reason.
 */
export function buildPlannerGraph(deps: PlannerGraphDependencies, runtime = new PlannerRuntime(deps)) {
  const bounded =
    (node: PlannerNode, work: (meta: PlannerMetadata, scope: RunScope) => Promise<PlannerUpdate>) =>
    async (state: PlannerStateValue, config: RunnableConfig): Promise<PlannerUpdate> => {
      const scope = runtime.scope(config);
      const { bookkeeping, stop } = checkVisit(state.planner, node);
      if (stop) {
        scope.log.warn({ node, bound: stop.bound, reason: stop.reason }, 'planner bound reached');
        return { planner: { ...bookkeeping, stop, maxIterationsReached: true } };
      }
      try {
        const update = await work({ ...state.planner, ...bookkeeping }, scope);
        const stopped = update.planner?.stop;
        // Seed 003's lastError: which node could not get a valid answer, and how often it asked.
        const lastError =
          stopped?.bound === 'malformed_output' ? { node, error: stopped.reason, timestamp: deps.clock.now().getTime(), retryCount: state.planner.budgets.structuredRetries } : undefined;
        return { ...update, planner: { ...bookkeeping, ...update.planner, ...(lastError ? { lastError } : {}) } };
      } catch (error) {
        // A node waiting for a person's approval (I16) has not failed: the run ends `interrupted`.
        if (isGraphInterrupt(error)) throw error;
        await stopOnFailure(runtime, scope, state.planner, node, error);
        throw error;
      }
    };

  const stopped = (state: PlannerStateValue) => state.planner.stop !== null;
  const graph = new StateGraph(PlannerState)
    .addNode(NODES.recall, recallNode(runtime))
    .addNode(NODES.knowledge, bounded(NODES.knowledge, knowledgeNode(runtime)))
    .addNode(NODES.strategicPlanner, bounded(NODES.strategicPlanner, strategicPlannerNode(runtime)))
    .addNode(NODES.tacticalPlanner, bounded(NODES.tacticalPlanner, tacticalPlannerNode(runtime)))
    .addNode(NODES.executor, bounded(NODES.executor, executorNode(runtime)))
    .addNode(NODES.tacticalCritic, bounded(NODES.tacticalCritic, tacticalCriticNode(runtime)))
    .addNode(NODES.strategicCritic, bounded(NODES.strategicCritic, strategicCriticNode(runtime)))
    .addNode(NODES.complete, completeNode(runtime))
    .addEdge(START, NODES.recall)
    .addConditionalEdges(NODES.recall, routeAfterRecall, [NODES.knowledge, NODES.tacticalPlanner, NODES.executor, NODES.strategicCritic, NODES.complete])
    .addConditionalEdges(NODES.knowledge, (state) => (stopped(state) ? NODES.complete : NODES.strategicPlanner), [NODES.strategicPlanner, NODES.complete])
    .addConditionalEdges(NODES.strategicPlanner, (state) => (stopped(state) ? NODES.complete : NODES.tacticalPlanner), [NODES.tacticalPlanner, NODES.complete])
    .addConditionalEdges(NODES.tacticalPlanner, (state) => (stopped(state) ? NODES.complete : NODES.executor), [NODES.executor, NODES.complete])
    .addConditionalEdges(
      NODES.executor,
      (state) => (stopped(state) ? NODES.complete : state.planner.executorContinue ? NODES.executor : NODES.tacticalCritic),
      [NODES.executor, NODES.tacticalCritic, NODES.complete],
    )
    .addConditionalEdges(NODES.tacticalCritic, routeAfterTacticalCritic, [NODES.executor, NODES.tacticalPlanner, NODES.strategicCritic, NODES.complete])
    .addConditionalEdges(
      NODES.strategicCritic,
      (state) => (!stopped(state) && state.planner.finalCriticDecision === 'revise' ? NODES.strategicPlanner : NODES.complete),
      [NODES.strategicPlanner, NODES.complete],
    )
    .addEdge(NODES.complete, END);
  return graph.compile({ checkpointer: deps.checkpointer }).withConfig({ recursionLimit: RECURSION_LIMIT });
}

export type PlannerGraph = ReturnType<typeof buildPlannerGraph>;

function routeAfterTacticalCritic(state: PlannerStateValue): string {
  const meta = state.planner;
  if (meta.stop) return NODES.complete;
  if (meta.criticDecision === 'continue') return NODES.executor;
  if (meta.criticDecision === 'revise') return NODES.tacticalPlanner;
  return meta.activeMilestone ? NODES.tacticalPlanner : NODES.strategicCritic;
}

/**
 * The planner as the run coordinator drives it: `complete` is the reply node; a stop's
 * reason goes on the run record. Its `stream` is the compiled graph's, with one addition:
 * when the run's signal aborts (a cancel, a person pre-empting a heartbeat run, a
 * shutdown), the plan's stop is announced right then — LangGraph gives up on the stream
 * without waiting for the node in flight, so an announcement from the node would come
 * after `run.end`.
 */
export function registerPlannerGraph(deps: PlannerGraphDependencies): RegisteredGraph & { compiled: PlannerGraph } {
  const runtime = new PlannerRuntime(deps);
  const compiled = buildPlannerGraph(deps, runtime);
  const graph: AgentGraph = {
    getState: (config) => compiled.getState(config),
    stream: async (input, options) => {
      const runId = runIdOf(options);
      const signal = options.signal;
      const onAbort = () => announceCancel(runtime, runId, signal);
      signal?.addEventListener('abort', onAbort, { once: true });
      try {
        const stream = await compiled.stream(input as never, options as never);
        return (async function* () {
          try {
            yield* stream as AsyncIterable<unknown>;
          } finally {
            signal?.removeEventListener('abort', onAbort);
          }
        })();
      } catch (error) {
        signal?.removeEventListener('abort', onAbort);
        throw error;
      }
    },
  };
  return {
    graph,
    compiled,
    replyNodes: new Set([NODES.complete]),
    endReason: (values) => {
      const stop = (values as { planner?: { stop?: { reason?: unknown } | null } } | null)?.planner?.stop;
      return typeof stop?.reason === 'string' ? stop.reason : null;
    },
  };
}

/** Synchronously (inside `abort()`): plan.complete first; the plan's record follows, and may not undo a newer run's work. */
function announceCancel(runtime: PlannerRuntime, runId: string | undefined, signal: AbortSignal | undefined): void {
  const plan = runId ? runtime.inWork.get(runId) : undefined;
  if (!runId || !plan) return;
  runtime.inWork.delete(runId);
  const { deps } = runtime;
  const why = reasonOf(signal);
  const reason = `cancelled: ${why}`;
  deps.events.publish({ type: 'plan.complete', threadId: plan.threadId, runId, at: deps.clock.now().toISOString(), planId: plan.planId, status: 'stopped', reason });
  const log = deps.logger.child({ threadId: plan.threadId, runId });
  void (async () => {
    const stopped = await deps.plans.markStopped(plan.planId, { runId, reason }, deps.clock.now().toISOString());
    // A shutdown only interrupts the work: the overlord may pick it up. A person's cancel ends it.
    if (stopped && why === STOPPING_REASON) {
      const agent = await deps.agents.get(plan.userId, plan.agentId);
      const settings = plannerSettingsOf(agent?.settings ?? {});
      if (settings.overlord.enabled) await deps.heartbeats.arm({ ...plan, delayMs: settings.overlord.checkAfterMs });
    }
    log.info({ planId: plan.planId, reason, recorded: stopped }, 'plan stopped by a cancel');
  })().catch((error: unknown) => log.error({ err: error, planId: plan.planId }, 'could not record a cancelled plan'));
}

function runIdOf(options: RunnableConfig): string | undefined {
  const settings = (options.configurable as { vigil?: { runId?: unknown } } | undefined)?.vigil;
  return typeof settings?.runId === 'string' ? settings.runId : undefined;
}

/**
 * A node that throws (a provider error, a cancel) fails the run — the coordinator
 * records it and sends run.end — but the plan is left `stopped` with the reason, and its
 * completion event is sent first, so a forced end is never silent (a lesson of the seed).
 */
async function stopOnFailure(runtime: PlannerRuntime, scope: RunScope, meta: PlannerMetadata, node: string, error: unknown): Promise<void> {
  // A cancel is announced where it happens (registerPlannerGraph's stream), before run.end.
  if (scope.config.signal?.aborted === true) return;
  runtime.inWork.delete(scope.run.runId);
  const planId = meta.activePlanId;
  if (!planId) return;
  const message = error instanceof Error ? error.message : String(error);
  const reason = `error in ${node}: ${message.slice(0, 300)}`;
  try {
    const plan = await runtime.deps.plans.get(scope.run.userId, planId);
    if (!plan || !['planning', 'active', 'stopped'].includes(plan.status)) return;
    await runtime.deps.plans.update(planId, { status: 'stopped', reason, lastRunId: scope.run.runId }, scope.now());
    runtime.emit(scope, { type: 'plan.complete', planId, status: 'stopped', reason });
    const settings = await runtime.settings(scope);
    if (settings.overlord.enabled && plan.heartbeat?.status !== 'ended') {
      await runtime.deps.heartbeats.arm({ userId: plan.userId, threadId: plan.threadId, planId, agentId: plan.agentId, delayMs: settings.overlord.checkAfterMs });
    }
  } catch (recordError) {
    scope.log.error({ err: recordError, planId }, 'could not record the plan stop after a failed node');
  }
}

function reasonOf(signal: AbortSignal | undefined): string {
  const reason: unknown = signal?.reason;
  return reason instanceof Error ? reason.message : 'the run was cancelled';
}
