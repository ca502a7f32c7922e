import type { TaskInput } from '../../agent/task-message.js';
import type { RunContext } from '../../domain/run-context.js';
import type { AgentRecord, RunRecord, StoredMessage } from '../ports.js';

export interface RunRequest {
  context: RunContext;
  agent: AgentRecord;
  /**
   * The task: a person's text or message, or a synthetic message with metadata. `null`
   * resumes the thread's interrupted turn from its checkpoint (a fire that a crash cut
   * short is finished, not started again).
   */
  input: TaskInput | null;
  /** The caller's signal (e.g. the HTTP client went away); cancels the run. */
  signal?: AbortSignal;
  /**
   * When another run holds the thread: `wait` queues behind it (a person's message);
   * `decline` gives up at once (a timer, which is deferred instead, I8).
   */
  whenBusy?: 'wait' | 'decline';
  /**
   * Started for a person's message that waits behind it (a decided tool step resumed before
   * the message is answered): like a person's own run, it asks a run of the agent's own
   * holding the thread to yield (I8), whatever trigger it carries.
   */
  forPerson?: boolean;
  /**
   * Called with the thread's lock held, before anything is recorded and before any
   * model call: the last word on whether the run happens (caps, budgets, I5) and with
   * what input. `signal` is aborted if a person's message already asked to pre-empt it.
   */
  admit?: (context: RunContext, signal: AbortSignal) => Promise<Admission>;
  /**
   * Whether each attempt's first model call is paid already (by `admit` or `beforeRetry`);
   * true unless said otherwise. False: nothing reserved ahead, so every model call of a
   * budgeted run (BUDGETED_TRIGGERS) reserves its own as it comes (a run resumed after an
   * approval, whose waiting run's admission paid only for the calls made before it, I5).
   */
  firstCallPrepaid?: boolean;
  /** Called before each retry of a failed model call (a retry is a model call too, I5); false stops retrying. */
  beforeRetry?: (retry: number) => Promise<boolean>;
  /**
   * Called once the run is requested, past the checks made before it waits for the thread:
   * a caller that acknowledges a person's message before its run starts (the WebSocket's
   * `message.accepted`) does so here, so that only what happens while the run waits (a
   * cancel, a stop, the thread's deletion) can still fail it after the acknowledgement.
   */
  onRequested?: () => void;
  /**
   * Called once the task message is in the thread's history (written before the graph starts),
   * before the model answers: a caller that acknowledges the request before the run ends
   * (a webhook's 202) waits for this, so a crash after the answer loses nothing.
   */
  onInputStored?: () => void;
}

export type Admission = { admitted: true; input?: TaskInput | null } | { admitted: false; reason: string };

export interface RunOutcome {
  run: RunRecord;
  /** Messages this run added to the thread's history, in order (visible and internal). */
  messages: StoredMessage[];
}

/** A run that never started: the thread was busy, or `admit` said no. Nothing was recorded. */
export interface RunDeclined {
  declined: string;
}

export interface RunEndEvent {
  context: RunContext;
  agent: AgentRecord;
  outcome: RunOutcome;
  /** True when a person's message arrived while this run held the thread: whatever it planned next is stale. */
  supersededByPerson: boolean;
  /** Aborted if a person's message arrives while the hooks run (an evaluator's model call stops). */
  signal: AbortSignal;
}

/** Called after `run.end`, with the thread still locked (nothing can interleave). */
export type RunEndHook = (event: RunEndEvent) => Promise<void>;

/** The context a recorded run ran with (to finish what it left behind). */
export function contextOfRun(run: RunRecord): RunContext {
  return { runId: run.id, threadId: run.threadId, userId: run.userId, agentId: run.agentId, trigger: run.trigger, meta: run.meta, requestedAt: run.requestedAt, correlationId: run.correlationId };
}
