import type { ModelInputLog } from './runs/model-input-log.js';
import type { BaseCallbackHandler } from '@langchain/core/callbacks/base';
import type { Logger } from 'pino';
import type { RegisteredGraph } from '../agent/agent-graph.js';
import { runConfig } from '../agent/run-settings.js';
import type { TaskInput } from '../agent/task-message.js';
import { VigilError, isVigilError } from '../domain/errors.js';
import type { VigilEvent } from '../domain/events.js';
import type { RunContext } from '../domain/run-context.js';
import type { AgentKind, AgentRecord, Clock, EventBus, RunRecord, Storage, StoredMessage } from './ports.js';
import { resolveRunMeta } from './run-meta.js';
import { MessageAnnouncer } from './runs/message-announcer.js';
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from './runs/retry-policy.js';
import { RunExecution } from './runs/run-execution.js';
import type { RunDeclined, RunEndEvent, RunEndHook, RunOutcome, RunRequest } from './runs/run-request.js';
import { messagesOf } from './runs/stream-attempt.js';
import { InProcessThreadLocks, type ThreadLease, type ThreadLockService } from './thread-lock.js';

export type { Admission, RunDeclined, RunEndEvent, RunEndHook, RunOutcome, RunRequest } from './runs/run-request.js';
export { publicMetadataOf } from './runs/message-announcer.js';

export interface RunCoordinatorDependencies {
  storage: Storage;
  /** The compiled graph of each agent kind. */
  graphs: Partial<Record<AgentKind, RegisteredGraph>>;
  events: EventBus;
  clock: Clock;
  logger: Logger;
  /** The model used when an agent names none. */
  defaultModel: string;
  /** Label a model spec for run records and events. */
  modelLabel: (spec: string) => string;
  /** One run per thread (I8): in-process by default, a PostgreSQL advisory lock across instances. */
  locks?: ThreadLockService;
  /** Retries of a failed model call before the run fails (default 2). */
  modelRetries?: number;
  /** Backoff before the first retry, doubled for each further one (default 500 ms). */
  retryBackoffMs?: number;
  /** The longest `retry-after` a retry waits for (default 30 s); a longer one ends the run. */
  maxRetryAfterMs?: number;
  /** The longest silence inside a model's stream before the attempt fails MODEL_TIMEOUT (the model timeout). */
  modelStallTimeoutMs?: number;
  /** Callbacks each run's graph gets, made per run (an OpenTelemetry tracer: one trace per run). */
  runCallbacks?: () => BaseCallbackHandler[];
  /** What each run's model calls received (told by the context window), kept with the run. */
  modelInputs?: ModelInputLog;
}

/**
 * Runs a person's message pre-empts (I8): the agent acting on its own (a follow-up, a
 * check-in it set itself, a planner's heartbeat).
 */
const PREEMPTIBLE_TRIGGERS: ReadonlySet<RunContext['trigger']> = new Set(['autonomy', 'check_in', 'heartbeat']);
export const PREEMPTED_REASON = 'pre-empted by a person\'s message';
export const STOPPING_REASON = 'the server is stopping';
/** How long a cancel that came before its run is kept, and how many at most. */
const EARLY_CANCEL_TTL_MS = 60_000;
const EARLY_CANCEL_LIMIT = 10_000;

interface ActiveRun {
  runId: string;
  userId: string;
  threadId: string;
  controller: AbortController;
  /** What was asked: a run cancelled before it started is described from it (cancelWaiting). */
  request: RunRequest;
  /** Whether it reached `execute` (its record is then written there, however it ends). */
  started?: boolean;
  /** Cancelled by its id before it started: the record it keeps (see markCancelledBeforeStart). */
  cancelledBeforeStart?: RunRecord;
}

/**
 * Starts runs: takes the thread's lock (one run per thread, I8), records the run, drives
 * the graph while streaming events (the saver stores history with each checkpoint and tells
 * the run, which announces it), and always ends with `run.end` — after success, error or
 * cancel.
 */
export class RunCoordinator {
  private readonly locks: ThreadLockService;
  private readonly active = new Map<string, ActiveRun>(); // runId → run
  /**
   * Runs from their request until they end, cancellable by id before they are `active`
   * (waiting for their thread's lock, or holding it while their record is written).
   */
  private readonly requested = new Map<string, ActiveRun>(); // runId → run
  private readonly cancelledEarly = new Map<string, { userId: string; reason: string; at: number }>(); // runId → a cancel that came first
  /** Runs (ids) waiting for their thread's lock: a stop calls them off at once. */
  private readonly waiting = new Set<string>();
  /** Deletions waiting for their thread (withThreadCleared): a stop calls them off too. */
  private readonly clearing = new Set<AbortController>();
  private readonly runEndHooks: RunEndHook[] = [];
  private readonly retry: RetryPolicy;
  private readonly announcer: MessageAnnouncer;
  /** Runs between taking and releasing their thread's lock (admission, run, hooks). */
  private critical = 0;
  private stopping = false;

  constructor(private readonly deps: RunCoordinatorDependencies) {
    this.locks = deps.locks ?? new InProcessThreadLocks();
    this.retry = { ...DEFAULT_RETRY_POLICY, ...(deps.modelRetries !== undefined ? { maxRetries: deps.modelRetries } : {}), ...(deps.retryBackoffMs !== undefined ? { backoffMs: deps.retryBackoffMs } : {}), ...(deps.maxRetryAfterMs !== undefined ? { maxRetryAfterMs: deps.maxRetryAfterMs } : {}) };
    this.announcer = new MessageAnnouncer({ logger: deps.logger, emit: (event) => this.emit(event) });
  }

  /**
   * Cancel a run of this user: one in progress, or one still waiting for its thread (it
   * then never starts); false when this process has no such run.
   */
  cancel(userId: string, runId: string, reason = 'the run was cancelled'): boolean {
    const run = this.active.get(runId) ?? this.requested.get(runId);
    if (!run || run.userId !== userId) return false;
    if (!run.started) this.markCancelledBeforeStart(run, reason);
    run.controller.abort(new VigilError('RUN_CANCELLED', reason));
    return true;
  }

  /**
   * Cancel a run of this user that has not started (it waits for its thread behind another
   * run): it then never starts (nothing of it reaches the thread), and its record says it was
   * cancelled. Answers that record; undefined when this process has no such run waiting
   * (none, another user's, or one already started, which `cancel` ends and its record describes).
   */
  cancelWaiting(userId: string, runId: string, reason = 'the run was cancelled'): RunRecord | undefined {
    const run = this.requested.get(runId);
    if (!run || run.userId !== userId || run.started) return undefined;
    const record = this.markCancelledBeforeStart(run, reason);
    run.controller.abort(new VigilError('RUN_CANCELLED', reason));
    return record;
  }

  /**
   * The record of a run called off by its id before it started. It is written as the run
   * gives up (tryRun), so its id, handed out when its message was accepted, names a run
   * whichever instance is asked: a cancel that reached another instance finds it there.
   */
  private markCancelledBeforeStart(run: ActiveRun, reason: string): RunRecord {
    if (run.cancelledBeforeStart !== undefined) return run.cancelledBeforeStart;
    const { context, agent } = run.request;
    const now = this.deps.clock.now().toISOString();
    run.cancelledBeforeStart = {
      id: run.runId,
      threadId: context.threadId,
      userId: run.userId,
      agentId: context.agentId,
      trigger: context.trigger,
      meta: resolveRunMeta(context).meta,
      correlationId: context.correlationId,
      status: 'cancelled',
      reason,
      errorCode: null,
      errorMessage: null,
      model: this.deps.modelLabel(agent.model ?? this.deps.defaultModel),
      requestedAt: context.requestedAt,
      startedAt: now,
      endedAt: now,
      modelInputs: [],
    };
    return run.cancelledBeforeStart;
  }

  /** Write the record of a run cancelled before it started (see markCancelledBeforeStart); a failure is logged, the cancel stands. */
  private async recordCancelledBeforeStart(record: RunRecord): Promise<void> {
    try {
      await this.deps.storage.runs.create(record);
      await this.deps.storage.runs.finish(record.id, { status: 'cancelled', reason: record.reason, endedAt: record.endedAt! });
    } catch (error) {
      this.deps.logger.warn({ err: error, threadId: record.threadId, runId: record.id }, 'could not record a run cancelled before it started');
    }
  }

  /**
   * Cancel a run of this user now, or, when this process has not been asked for it yet, as
   * soon as it is (within a minute): a cancel from another instance can overtake the run it
   * names on its way here (a protocol run queued on this instance is still being admitted
   * by the conversation service when the cancel arrives), and was lost, leaving the run to
   * start when its thread came free.
   */
  cancelNowOrWhenRequested(userId: string, runId: string, reason = 'the run was cancelled'): void {
    if (this.cancel(userId, runId, reason)) return;
    const now = Date.now();
    // Oldest first (insertion order): stop at the first one still kept.
    for (const [id, early] of this.cancelledEarly) {
      if (now - early.at <= EARLY_CANCEL_TTL_MS && this.cancelledEarly.size < EARLY_CANCEL_LIMIT) break;
      this.cancelledEarly.delete(id);
    }
    this.cancelledEarly.set(runId, { userId, reason, at: now });
    this.deps.logger.debug({ runId }, 'a cancel came before its run; kept for when it is requested');
  }

  /**
   * Run `work` holding the thread with no run on it (a thread's deletion): the thread's
   * runs in this process are called off first (one in progress is cancelled; one not yet
   * started, waiting for the thread or on its way to it, is answered `gone`), and a run
   * that gets the thread after `work` finds it gone (leaseAndRun), so none writes it back.
   */
  async withThreadCleared<T>(userId: string, threadId: string, reasons: { cancelled: string; gone: VigilError }, work: () => Promise<T>): Promise<T> {
    for (const run of this.requested.values()) {
      if (run.threadId !== threadId || run.userId !== userId) continue;
      run.controller.abort(this.active.has(run.runId) ? new VigilError('RUN_CANCELLED', reasons.cancelled) : reasons.gone);
    }
    // Waiting for another instance's run, it would hold a stop up (a lock wait keeps its connection).
    const clearing = new AbortController();
    this.clearing.add(clearing);
    if (this.stopping) clearing.abort(deletionStopped());
    let lease: ThreadLease;
    try {
      lease = await this.locks.acquire(threadId, clearing.signal);
    } finally {
      this.clearing.delete(clearing);
    }
    try {
      return await work();
    } finally {
      await lease.release();
    }
  }

  activeRunOf(threadId: string): string | undefined {
    for (const run of this.active.values()) if (run.threadId === threadId) return run.runId;
    return undefined;
  }

  /** Register a hook called after every run (autonomy schedules the next follow-up there). */
  onRunEnd(hook: RunEndHook): void {
    this.runEndHooks.push(hook);
  }

  /**
   * For a graceful stop: refuse new runs, give those in flight up to `graceMs` to finish
   * (their replies are worth keeping), then cancel the rest and wait for them to record
   * their end. A cancelled run's checkpoint keeps what it had; `run.end` says why.
   */
  async drain(graceMs = 0): Promise<void> {
    this.stopping = true;
    // A run still waiting for its thread would be refused once it got it: called off now,
    // its caller hears at once, and a wait for another instance's run ends with it.
    for (const runId of this.waiting) this.requested.get(runId)?.controller.abort(new VigilError('RUN_CANCELLED', STOPPING_REASON));
    for (const clearing of this.clearing) clearing.abort(deletionStopped());
    const busy = () => this.active.size > 0 || this.critical > 0;
    const deadline = Date.now() + graceMs;
    while (busy() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    for (const run of this.active.values()) run.controller.abort(new VigilError('RUN_CANCELLED', STOPPING_REASON));
    while (busy()) await new Promise((resolve) => setTimeout(resolve, 20));
  }

  /** A run that waits for the thread and always starts (unless the server is stopping). */
  async run(request: RunRequest): Promise<RunOutcome> {
    const outcome = await this.tryRun({ ...request, whenBusy: 'wait', admit: undefined });
    if ('declined' in outcome) throw new VigilError('INTERNAL', `run declined: ${outcome.declined}`); // unreachable without admit
    return outcome;
  }

  /**
   * Start a run: take the thread's lock (I8; a person's message first asks an
   * autonomous run holding it to yield), let `admit` decide, record the run, drive the
   * graph while streaming events, retry a failing model a bounded number of times, and
   * always end with `run.end`.
   */
  async tryRun(request: RunRequest): Promise<RunOutcome | RunDeclined> {
    const { context, agent } = request;
    if (this.stopping) throw new VigilError('RUN_CANCELLED', STOPPING_REASON);
    const registered = this.deps.graphs[agent.kind];
    if (!registered) throw new VigilError('VALIDATION_FAILED', `agents of kind "${agent.kind}" cannot run on this server`);
    const controller = new AbortController();
    const entry: ActiveRun = { runId: context.runId, userId: context.userId, threadId: context.threadId, controller, request };
    this.requested.set(context.runId, entry);
    const early = this.cancelledEarly.get(context.runId);
    if (early !== undefined) {
      this.cancelledEarly.delete(context.runId);
      if (early.userId === context.userId && Date.now() - early.at <= EARLY_CANCEL_TTL_MS) controller.abort(new VigilError('RUN_CANCELLED', early.reason));
    }
    // The caller going away (e.g. the HTTP client) cancels the run, waiting or running.
    const detachCaller = followCallerSignal(request.signal, controller);
    try {
      request.onRequested?.();
      return await this.leaseAndRun(request, registered, controller, entry);
    } catch (error) {
      if (!entry.started && entry.cancelledBeforeStart !== undefined) await this.recordCancelledBeforeStart(entry.cancelledBeforeStart);
      throw error;
    } finally {
      detachCaller();
      if (this.requested.get(context.runId) === entry) this.requested.delete(context.runId);
    }
  }

  /** tryRun, once the run can be cancelled by id: wait for the thread, admit, run. */
  private async leaseAndRun(request: RunRequest, registered: RegisteredGraph, controller: AbortController, entry: ActiveRun): Promise<RunOutcome | RunDeclined> {
    const { context, agent } = request;
    const lease = await this.waitForThread(request, controller);
    if (!lease) return { declined: 'thread_busy' };
    this.critical += 1;
    try {
      // Cancelled as its wait ended (by id, or its caller went away): it never starts, so a
      // queued message that was called off is not added to the thread.
      if (controller.signal.aborted) throw controller.signal.reason;
      if (PREEMPTIBLE_TRIGGERS.has(context.trigger)) {
        const preempt = () => controller.abort(new VigilError('RUN_CANCELLED', PREEMPTED_REASON));
        if (lease.yieldRequested.aborted) preempt();
        else lease.yieldRequested.addEventListener('abort', preempt, { once: true });
      }
      // Deleted while the run waited (a deletion holds the thread, see withThreadCleared; one
      // through another instance does not call this run off): nothing of the run is written,
      // which would bring the thread's checkpoint back. Asked before the admission too, which
      // writes (a protocol run's claim, a check-in's fire) and would answer for a thread that
      // is gone (a protocol run's row, gone with it, refused its claim: "its server stopped").
      const gone = () => new VigilError('THREAD_NOT_FOUND', `no thread "${context.threadId}"`);
      if (request.admit && !(await this.deps.storage.threads.get(context.userId, context.threadId))) throw gone();
      let input = request.input;
      if (request.admit) {
        const admission = await request.admit(context, controller.signal);
        if (!admission.admitted) return { declined: admission.reason };
        if (admission.input !== undefined) input = admission.input;
      }
      if (this.stopping) throw new VigilError('RUN_CANCELLED', STOPPING_REASON);
      // Read after the admission, which may have written to the thread.
      const thread = await this.deps.storage.threads.get(context.userId, context.threadId);
      if (!thread) throw gone();
      // From here its record is written by `execute`, whether it runs or is cancelled at once.
      entry.started = true;
      const outcome = await this.execute(request, registered, controller, input);
      await this.afterRun({ context, agent, outcome, supersededByPerson: lease.yieldRequested.aborted, signal: lease.yieldRequested });
      return outcome;
    } finally {
      this.critical -= 1;
      await lease.release();
    }
  }

  /**
   * Take the thread's lock (or none, for a run that declines when busy). Cancelled by id or
   * by its caller meanwhile, the run stops waiting at once with RUN_CANCELLED: its place in
   * the queue passes the lock straight on when its turn comes.
   */
  private async waitForThread(request: RunRequest, controller: AbortController): Promise<ThreadLease | undefined> {
    const { context } = request;
    // A person is never kept waiting behind the agent talking to itself.
    // (A chat channel's message is a person speaking too.)
    if (context.trigger === 'user' || context.trigger === 'channel' || request.forPerson === true) await this.locks.requestYield(context.threadId);
    if (request.whenBusy === 'decline') return await this.locks.tryAcquire(context.threadId);
    this.waiting.add(context.runId);
    try {
      // A stop that began since the request would have found the run here.
      if (this.stopping) throw new VigilError('RUN_CANCELLED', STOPPING_REASON);
      return await this.locks.acquire(context.threadId, controller.signal);
    } finally {
      this.waiting.delete(context.runId);
    }
  }

  /**
   * The run itself, in named steps (see RunExecution): record and announce it, drive the
   * graph with bounded retries, record how it ended, and always announce the end.
   */
  private async execute(request: RunRequest, registered: RegisteredGraph, controller: AbortController, input: TaskInput | null): Promise<RunOutcome> {
    const modelSpec = request.agent.model ?? this.deps.defaultModel;
    const execution = new RunExecution(
      { storage: this.deps.storage, clock: this.deps.clock, logger: this.deps.logger, announcer: this.announcer, retry: this.retry, stallTimeoutMs: this.deps.modelStallTimeoutMs, emit: (event) => this.emit(event), modelSpec, modelName: this.deps.modelLabel(modelSpec), callbacks: this.deps.runCallbacks, modelInputs: this.deps.modelInputs },
      request,
      registered,
      controller,
    );
    try {
      const run = await execution.startRun(input === null);
      this.active.set(run.id, { runId: run.id, userId: request.context.userId, threadId: request.context.threadId, controller, request });
      await execution.streamWithRetries(input);
      return await execution.finishRun();
    } catch (error) {
      return await execution.failRun(error);
    } finally {
      if (execution.run) this.active.delete(execution.run.id);
      execution.emitRunEnd();
    }
  }

  private async afterRun(event: RunEndEvent): Promise<void> {
    for (const hook of this.runEndHooks) {
      try {
        await hook(event);
      } catch (error) {
        this.deps.logger.error({ err: error, threadId: event.context.threadId, runId: event.context.runId }, 'a run-end hook failed');
      }
    }
  }

  /**
   * Where a turn stands in the thread's checkpoint: the message is not there, or it is
   * followed by the agent's reply, or by a person's newer message, or by nothing yet.
   * Used to finish, never repeat, a turn a crashed process left behind.
   */
  async inspectTurn(agent: AgentRecord, context: RunContext, messageId: string): Promise<'absent' | 'answered' | 'superseded' | 'unanswered'> {
    const registered = this.deps.graphs[agent.kind];
    if (!registered) return 'absent';
    const state = await registered.graph.getState(runConfig({ ...placeholderSettings(context), model: agent.model ?? this.deps.defaultModel }));
    const messages = messagesOf(state.values);
    const index = messages.findIndex((message) => message.id === messageId);
    if (index < 0) return 'absent';
    // The first reply or person's message after it decides: an AI message that answers a
    // person's later message is not this turn's reply (taking it for one marked a crashed
    // fire "succeeded" with no reply, and planned a follow-up on the person's turn).
    const next = messages.slice(index + 1).find((message) => message.getType() === 'ai' || message.getType() === 'human');
    if (next?.getType() === 'ai') return 'answered';
    if (next?.getType() === 'human') return 'superseded';
    return 'unanswered';
  }

  /**
   * Where a turn stands in the thread's checkpoint once a decided tool step was taken up (the
   * checkpoint no longer waits on it): at its end (`answered`: nothing left to run, whether
   * the agent replied or a later run moved the thread on), stopped at another step's
   * interrupt (`waiting` for a person), or with nodes left to run and nothing to wait for
   * (`unanswered`: a run was cut short mid-turn; resuming with no input finishes it, and a
   * node that already ran is not run again).
   */
  async inspectTakenUpStep(agent: AgentRecord, context: RunContext): Promise<'answered' | 'unanswered' | 'waiting'> {
    const registered = this.deps.graphs[agent.kind];
    if (!registered) return 'answered';
    const state = await registered.graph.getState(runConfig({ ...placeholderSettings(context), model: agent.model ?? this.deps.defaultModel }));
    if ((state.tasks ?? []).some((task) => (task.interrupts ?? []).length > 0)) return 'waiting';
    return (state.next ?? []).length > 0 ? 'unanswered' : 'answered';
  }

  private emit(event: VigilEvent): void {
    this.deps.events.publish(event);
  }
}

/** Why a deletion waiting for its thread was called off by a stop. */
function deletionStopped(): VigilError {
  return new VigilError('SERVER_STOPPING', 'the server is stopping; the thread was not deleted');
}

/**
 * The caller's signal cancels the run; returns the detach. A caller that says why (a
 * VigilError as the abort reason, e.g. the protocol's explicit cancel) is recorded as it
 * said; any other abort is the caller going away (e.g. the HTTP client disconnecting).
 */
function followCallerSignal(signal: AbortSignal | undefined, controller: AbortController): () => void {
  if (!signal) return () => {};
  const onCallerAbort = () => controller.abort(isVigilError(signal.reason) ? signal.reason : new VigilError('RUN_CANCELLED', 'the client went away'));
  signal.addEventListener('abort', onCallerAbort, { once: true });
  if (signal.aborted) onCallerAbort();
  return () => signal.removeEventListener('abort', onCallerAbort);
}

function placeholderSettings(context: RunContext) {
  return { runId: context.runId, threadId: context.threadId, userId: context.userId, agentId: context.agentId, trigger: context.trigger, systemPrompt: '' };
}
