import { appendVisit, detectCycle, sameNodeRun, visitEntry, type Progress } from './loop-bounds.js';
import type { PlannerMetadata, StopBound } from './planner-state.js';

export interface Stop {
  bound: StopBound;
  reason: string;
}

/** What a node visit adds to the run's bookkeeping, and the bound it trips, if any. */
export interface VisitCheck {
  bookkeeping: Pick<PlannerMetadata, 'visited' | 'stepCount' | 'sameNodeLoopCount'>;
  stop: Stop | null;
}

export function progressOf(meta: PlannerMetadata): Progress {
  return {
    milestoneIndex: meta.activeMilestone?.orderIndex ?? null,
    revision: meta.revisionCount,
    step: meta.currentStep,
    strategicRevision: meta.strategicRevisionCount,
    milestonesDone: meta.completedMilestoneIds.length,
  };
}

/**
 * Checked before every node does its work (I9): the total step budget, a same-node
 * loop, a repeated cycle of nodes, and the token budget. Tool-call bounds are checked
 * per call, where the calls are made.
 */
export function checkVisit(meta: PlannerMetadata, node: string): VisitCheck {
  const { budgets } = meta;
  const stepCount = meta.stepCount + 1;
  const sameNodeLoopCount = sameNodeRun(meta.visited, node);
  const visited = appendVisit(meta.visited, visitEntry(node, progressOf(meta)));
  const bookkeeping = { visited, stepCount, sameNodeLoopCount };
  if (stepCount > budgets.maxSteps) return { bookkeeping, stop: { bound: 'max_steps', reason: `step budget spent: ${budgets.maxSteps} graph steps this run (limit ${budgets.maxSteps})` } };
  if (sameNodeLoopCount > budgets.maxSameNodeLoops) {
    return { bookkeeping, stop: { bound: 'same_node_loop', reason: `same-node loop: ${node} ran ${budgets.maxSameNodeLoops} times in a row (limit ${budgets.maxSameNodeLoops})` } };
  }
  const cycle = detectCycle(visited, budgets.maxCycleRepeats);
  if (cycle) {
    const turn = [...cycle.nodes, cycle.nodes[0]].join(' → ');
    return { bookkeeping, stop: { bound: 'node_cycle', reason: `repeated node cycle: ${turn} went round ${cycle.repeats} times without progress (limit ${budgets.maxCycleRepeats})` } };
  }
  if (meta.tokensUsed >= budgets.maxTokens) return { bookkeeping, stop: { bound: 'token_budget', reason: `token budget spent: ${meta.tokensUsed} tokens this run (limit ${budgets.maxTokens})` } };
  return { bookkeeping, stop: null };
}

/**
 * A critic still asked for a revision at the cap. The plan was never approved, so it is
 * stopped, not completed (the seed auto-approved here and reported success).
 */
export function revisionCapStop(level: 'tactical' | 'strategic', maxRevisions: number, criticReason: string): Stop {
  return { bound: 'revision_cap', reason: `revision cap reached: the ${level} critic still asked for a revision after ${maxRevisions} (limit ${maxRevisions}): ${criticReason}` };
}

export function malformedStop(what: string, attempts: number, error: string): Stop {
  return { bound: 'malformed_output', reason: `the model gave no valid ${what} after ${attempts} attempt${attempts === 1 ? '' : 's'}: ${error}` };
}
