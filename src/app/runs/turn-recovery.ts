import type { AgentRecord, RunRecord, Storage, StoredMessage } from '../ports.js';
import type { RunContext } from '../../domain/run-context.js';
import type { RunCoordinator } from '../run-coordinator.js';
import { STOPPING_REASON } from '../run-coordinator.js';
import { endedByDeadProcess, processEndedRunEnd } from './orphaned-run-sweeper.js';

/**
 * A triggered turn (a follow-up, a check-in, a tool step a person decided) whose run was
 * cut short: still marked running (its process died), cancelled by a graceful stop, or
 * ended by the sweep. Its timer was marked fired (its approvals decided), so without
 * recovery the turn the agent planned or promised (the person approved) never finishes.
 */
export function interruptedRun(run: Pick<RunRecord, 'status' | 'reason'>): boolean {
  return run.status === 'running' || (run.status === 'cancelled' && run.reason === STOPPING_REASON) || endedByDeadProcess(run);
}

/** `waiting`: the graph stopped at another interrupt (a later step waits for a person). */
export type TurnState = 'absent' | 'answered' | 'superseded' | 'unanswered' | 'waiting';

/**
 * Which turn: the one a message started (a follow-up's, a check-in's), found by that
 * message in the checkpoint; or the one a decided tool step belongs to, once the step was
 * taken up (the checkpoint no longer waits on it), found by where the graph stopped.
 */
export type CutShortTurn = { messageId: string } | { takenUpStep: string };

/**
 * Under the thread's lock (nothing else runs on it): where the cut-short turn stands in the
 * checkpoint, with its previous run ended as its record should say (a run a dead process
 * left running: succeeded if its reply was saved, else failed as the sweep would), and the
 * messages the cut-short run added to history when the checkpoint holds the whole turn (or a
 * person moved on).
 */
export async function inspectCutShortTurn(
  deps: { coordinator: RunCoordinator; storage: Storage },
  agent: AgentRecord,
  context: RunContext,
  which: CutShortTurn,
  /** The cut-short run: its id as the timer recorded it (or the run found), and its record when it was written. */
  previous: { runId: string | null; record: RunRecord | undefined },
  now: string,
): Promise<{ turn: TurnState; synced: StoredMessage[] }> {
  const turn = 'messageId' in which ? await deps.coordinator.inspectTurn(agent, context, which.messageId) : await deps.coordinator.inspectTakenUpStep(agent, context);
  if (previous.record?.status === 'running') {
    const end = turn === 'answered' ? { status: 'succeeded' as const, reason: 'its process ended after the reply was saved' } : processEndedRunEnd(now);
    await deps.storage.runs.finish(previous.record.id, { ...end, endedAt: now });
  }
  // History is stored with the checkpoints: what the cut-short run added is there already.
  const synced = (turn === 'answered' || turn === 'superseded') && previous.runId !== null ? await deps.storage.threads.messagesOfRun(context.userId, context.threadId, previous.runId) : [];
  return { turn, synced };
}
