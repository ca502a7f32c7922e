import type { ModelInputRecord } from '../../domain/context/context-report.js';
import { PREPAID_MODEL_CALL, type PrepaidModelCall } from '../../domain/autonomy/autonomous-triggers.js';
import type { ModelInputLog } from './model-input-log.js';
import type { BaseCallbackHandler } from '@langchain/core/callbacks/base';
import type { BaseMessage } from '@langchain/core/messages';
import type { RunnableConfig } from '@langchain/core/runnables';
import type { Logger } from 'pino';
import type { RegisteredGraph } from '../../agent/agent-graph.js';
import { runConfig, type RunSettings } from '../../agent/run-settings.js';
import { newMessageId } from '../../agent/message-identity.js';
import { toTaskMessage, type TaskInput } from '../../agent/task-message.js';
import { deltaTextOf } from '../../domain/message-content.js';
import type { ErrorCode } from '../../domain/errors.js';
import type { VigilEvent } from '../../domain/events.js';
import type { RunContext } from '../../domain/run-context.js';
import { HISTORY_SINK, HOLD_INPUT_STEP, HOLD_SUPERSEDED_WRITES, type Clock, type HistorySink, type RunRecord, type Storage, type StoredMessage } from '../ports.js';
import { resolveRunMeta } from '../run-meta.js';
import type { MessageAnnouncer } from './message-announcer.js';
import { classifyModelFailure, type ModelFailure } from './model-failure.js';
import { retryDecision, sleep, type RetryPolicy } from './retry-policy.js';
import type { RunOutcome, RunRequest } from './run-request.js';
import { messagesOf, streamAttempt } from './stream-attempt.js';

export interface RunExecutionDependencies {
  storage: Storage;
  clock: Clock;
  logger: Logger;
  announcer: MessageAnnouncer;
  retry: RetryPolicy;
  /** The longest silence inside a model's stream (see streamAttempt); none when undefined. */
  stallTimeoutMs?: number | undefined;
  emit: (event: VigilEvent) => void;
  /** The model spec of the run (the agent's, or the server's default) and its label. */
  modelSpec: string;
  modelName: string;
  /** Callbacks for this run's graph (a tracer: one trace per run); made once per run. */
  callbacks?: (() => BaseCallbackHandler[]) | undefined;
  /** What the run's model calls received, recorded with the run's end. */
  modelInputs?: ModelInputLog | undefined;
}

/**
 * One run, step by step: `startRun` records it and announces `run.start`; `streamWithRetries`
 * drives the graph (`streamAttempt`), retrying a failing model per the retry policy;
 * `finishRun` or `failRun` record how it ended; `emitRunEnd` always announces the end.
 * The coordinator composes them (see RunCoordinator.execute); the lock, pre-emption and
 * admission stay there.
 */
export class RunExecution {
  readonly log: Logger;
  /** Messages this run added to the thread's history, in order. */
  readonly projected: StoredMessage[] = [];
  run: RunRecord | undefined;
  attempts = 0;
  /** The graph's last state, for `endReason` (a planner that stopped at a bound says why). */
  private lastValues: unknown;
  /** The task message's id, and whether it has reached the thread (`onInputStored` is called once). */
  private taskId: string | undefined;
  private inputStored = false;
  private readonly settings: RunSettings;
  /** Made once per run, so every attempt of the run lands in the same trace. */
  private readonly callbacks: BaseCallbackHandler[] | undefined;
  /** Model call → the id its deltas carry (see streamIdOf). */
  private readonly streamIds = new Map<string, string>();
  /** Whether the current attempt streamed any text (a failure after it is a cut stream). */
  private streamedThisAttempt = false;
  /** How the last failed attempt failed, and why the run stopped retrying. */
  private lastFailure: ModelFailure | undefined;
  private gaveUp: string | undefined;
  /** Whether the last attempt's graph stopped at interrupt(). */
  private interrupted = false;
  /** Stream ids whose deltas were sent but whose message has not reached state yet. */
  private readonly unlanded = new Set<string>();

  constructor(
    private readonly deps: RunExecutionDependencies,
    private readonly request: RunRequest,
    private readonly registered: RegisteredGraph,
    readonly controller: AbortController,
  ) {
    this.callbacks = deps.callbacks?.();
    const { context, agent } = request;
    this.log = deps.logger.child({ threadId: context.threadId, runId: context.runId });
    // Validated and redacted once: the run record, the log and the envelope share this copy.
    const runMeta = resolveRunMeta(context);
    if (!runMeta.valid) this.log.warn({ trigger: context.trigger, issues: runMeta.issues }, 'run meta failed its schema; only the core keys are kept');
    this.settings = {
      runId: context.runId,
      threadId: context.threadId,
      userId: context.userId,
      agentId: context.agentId,
      trigger: context.trigger,
      model: deps.modelSpec,
      systemPrompt: agent.systemPrompt,
      meta: runMeta.meta,
    };
  }

  get context(): RunContext {
    return this.request.context;
  }

  /** Record the run and announce it. */
  async startRun(resume: boolean): Promise<RunRecord> {
    const { context } = this;
    const { clock, modelName } = this.deps;
    this.run = await this.deps.storage.runs.create({
      id: context.runId,
      threadId: context.threadId,
      userId: context.userId,
      agentId: context.agentId,
      trigger: context.trigger,
      meta: this.settings.meta ?? {},
      correlationId: context.correlationId,
      model: modelName,
      requestedAt: context.requestedAt,
      startedAt: clock.now().toISOString(),
    });
    this.log.info({ trigger: context.trigger, model: modelName, meta: this.settings.meta, resume }, 'run started');
    this.deps.emit({ type: 'run.start', threadId: context.threadId, runId: this.run.id, at: clock.now().toISOString(), trigger: context.trigger, model: modelName });
    return this.run;
  }

  /** Drive the graph to its end, retrying a failed attempt per the retry policy (each retry passes `beforeRetry`, I5). */
  async streamWithRetries(input: TaskInput | null): Promise<void> {
    // An id of its own, so that a retry re-sends the same message (replaced, not repeated).
    const task = input === null ? null : toTaskMessage(input);
    this.taskId = task?.id;
    const graphInput = task === null ? null : { messages: [...(await this.storeInput(task)), task] };
    for (;;) {
      this.attempts += 1;
      this.streamedThisAttempt = false;
      try {
        const end = await streamAttempt(
          this.registered,
          graphInput,
          this.attemptConfig(),
          { onValues: (values) => this.onValues(values), onReplyChunk: (message, callId) => this.onReplyChunk(message, callId) },
          { signal: this.controller.signal, stallTimeoutMs: this.deps.stallTimeoutMs },
        );
        await this.settleCheckpoints();
        this.interrupted = end.interrupted;
        return;
      } catch (error) {
        await this.settleCheckpoints();
        this.retractUnlanded(this.controller.signal.aborted ? reasonOf(this.controller.signal) : 'the model call failed');
        await this.beforeRetry(error);
      }
    }
  }

  /**
   * The task written to the thread's history before the graph starts (durable, announced,
   * acknowledged: onInputStored), with the messages history holds that no stored checkpoint
   * does (a person's message accepted by a run whose process ended before its checkpoint
   * was stored): the run takes them first, before its own task, so the agent sees what was
   * said, in order.
   */
  private async storeInput(task: BaseMessage): Promise<BaseMessage[]> {
    const checkpointer = this.deps.storage.checkpointer;
    const unapplied =
      checkpointer.storeInput !== undefined
        ? await checkpointer.storeInput(this.context.threadId, [task], this.historySink())
        : ((await checkpointer.unappliedMessages?.(this.context.threadId)) ?? []);
    const taken = unapplied.filter((message) => message.id !== task.id);
    if (taken.length > 0) this.log.warn({ messageIds: taken.map((message) => message.id) }, 'the thread held accepted messages no checkpoint had (a run cut short by its process ending): taken in first');
    return taken;
  }

  /**
   * The graph's config for an attempt. Every graph a run drives takes one node per step,
   * and each attempt ends with settleCheckpoints: the saver may hold what the next
   * checkpoint supersedes (HOLD_SUPERSEDED_WRITES), the step that applied a task message
   * included (HOLD_INPUT_STEP: the run took the thread's unapplied messages first). What the
   * run adds to history is recorded with its id and told back as stored (HISTORY_SINK).
   */
  private attemptConfig(): RunnableConfig {
    const config = runConfig(this.settings);
    // The attempt's first model call is paid already: by the run's admission, or by beforeRetry
    // (I5); unless the request says nothing paid ahead, when each call pays its way.
    const prepaid: PrepaidModelCall = { remaining: this.request.firstCallPrepaid === false ? 0 : 1 };
    const configurable = {
      ...config.configurable,
      [HOLD_SUPERSEDED_WRITES]: true,
      ...(this.taskId !== undefined ? { [HOLD_INPUT_STEP]: true } : {}),
      [HISTORY_SINK]: this.historySink(),
      [PREPAID_MODEL_CALL]: prepaid,
    };
    return { ...config, configurable, ...(this.callbacks ? { callbacks: this.callbacks } : {}) };
  }

  /** The attempt ended (however): what the saver held for it is stored, before anything reads the state. */
  private async settleCheckpoints(): Promise<void> {
    try {
      await this.deps.storage.checkpointer.settle?.(this.context.threadId);
    } catch (error) {
      this.log.error({ err: error }, 'could not store the checkpoint writes held for the run');
    }
  }

  /** Throws `error` when the run must give up; otherwise waits out the backoff (or the provider's retry-after). */
  private async beforeRetry(error: unknown): Promise<void> {
    const failure = classifyModelFailure(error, { streamed: this.streamedThisAttempt });
    this.lastFailure = failure;
    const decision = retryDecision(failure, this.attempts, this.deps.retry, this.controller.signal);
    if (!decision.retry) {
      if (!this.controller.signal.aborted) this.log.warn({ err: error, code: failure.code, attempt: this.attempts, why: decision.why }, 'model call failed; not retrying');
      this.gaveUp = decision.why;
      throw error;
    }
    this.log.warn({ err: error, code: failure.code, attempt: this.attempts, retryInMs: decision.delayMs, ...(failure.retryAfterMs !== undefined ? { retryAfterMs: failure.retryAfterMs } : {}) }, 'model call failed; retrying');
    if (this.request.beforeRetry && !(await this.request.beforeRetry(this.attempts))) {
      this.log.warn({ attempt: this.attempts }, 'no retry: the run may not make another model call');
      this.gaveUp = 'the run may not make another model call (its caps or budget)';
      throw error;
    }
    await sleep(decision.delayMs, this.controller.signal);
  }

  /** What the saver records with the messages this run adds to history, and tells once they are stored. */
  private historySink(): HistorySink {
    return { runId: this.runId, now: () => this.deps.clock.now().toISOString(), onStored: (messages) => this.onStored(messages) };
  }

  /** A step's state, streamed once its checkpoint (or, held, the messages it added) is stored. */
  private async onValues(values: unknown): Promise<void> {
    this.lastValues = values;
    if (this.taskId !== undefined && !this.inputStored && endsWithId(messagesOf(values), this.taskId)) this.markInputStored();
  }

  /** The saver stored messages this run added to history (in the transaction of the checkpoint, or the held step, holding them). */
  private onStored(messages: StoredMessage[]): void {
    // A step that added messages has ended: what its model streamed is in state now.
    const streamedAs = this.unlanded.size === 1 ? [...this.unlanded][0] : undefined;
    this.unlanded.clear();
    this.projected.push(...messages);
    this.deps.announcer.announce(this.context, this.runId, messages, streamedAs);
    if (this.taskId !== undefined && !this.inputStored && messages.some((message) => message.id === this.taskId)) this.markInputStored();
  }

  private markInputStored(): void {
    this.inputStored = true;
    this.request.onInputStored?.();
  }

  /** Tell clients that the deltas they got for a message that never reached state are void. */
  private retractUnlanded(reason: string): void {
    for (const messageId of this.unlanded) {
      this.deps.emit({ type: 'message.retracted', threadId: this.context.threadId, runId: this.runId, at: this.deps.clock.now().toISOString(), messageId, reason });
    }
    this.unlanded.clear();
  }

  /** Text parts of any shape are streamed (a string, or Anthropic's `[{ type: 'text', text }]`); tool-argument parts are not text. */
  private onReplyChunk(message: BaseMessage, callId: string): void {
    const delta = deltaTextOf(message.content);
    if (!delta) return;
    const messageId = this.streamIdOf(callId);
    this.unlanded.add(messageId);
    this.streamedThisAttempt = true;
    this.deps.emit({ type: 'message.delta', threadId: this.context.threadId, runId: this.runId, at: this.deps.clock.now().toISOString(), messageId, delta });
  }

  /**
   * The id the deltas of one model call carry: vigil's own (I13), one per call (the call's
   * callback run id is the key; a retry is a new call). The provider's chunk id is no key:
   * a server that reuses one completion id would merge the deltas of two replies. The
   * reply's stored id is assigned when it enters state (message-identity.ts) and comes
   * with `message.end`.
   */
  private streamIdOf(callId: string): string {
    let id = this.streamIds.get(callId);
    if (id === undefined) {
      id = newMessageId();
      this.streamIds.set(callId, id);
    }
    return id;
  }

  /** The graph ended normally. */
  async finishRun(): Promise<RunOutcome> {
    // A graph that stopped at interrupt() waits for a person: `interrupted`, never `succeeded`
    // (I16). The stream said whether a node interrupted; the checkpoint confirms it (read
    // only then: a turn that did not interrupt reads no state at its end).
    const waiting = this.interrupted && (await this.registered.graph.getState(runConfig(this.settings))).tasks?.some((task) => (task.interrupts?.length ?? 0) > 0) === true;
    const end = waiting ? { status: 'interrupted' as const, reason: 'waiting for a person\'s approval' } : { status: 'succeeded' as const, reason: this.registered.endReason?.(this.lastValues) ?? null };
    const run = await this.deps.storage.runs.finish(this.runId, { ...end, modelInputs: this.modelInputs(), endedAt: this.deps.clock.now().toISOString() });
    this.run = run;
    this.log.info({ status: run.status }, 'run ended');
    return { run, messages: this.projected };
  }

  /** The run failed or was cancelled: record why (history is in step with the checkpoint: the saver writes both at once). */
  async failRun(error: unknown): Promise<RunOutcome> {
    const cancelled = this.controller.signal.aborted;
    const failure = this.lastFailure ?? classifyModelFailure(error, { streamed: this.streamedThisAttempt });
    const code: ErrorCode = cancelled ? 'RUN_CANCELLED' : failure.code;
    const message = cancelled ? reasonOf(this.controller.signal) : error instanceof Error ? error.message : String(error);
    if (cancelled) this.log.info({ reason: message }, 'run cancelled');
    else this.log.error({ err: error, code, attempts: this.attempts }, 'run failed');
    if (!this.run) throw error;
    this.run = await this.deps.storage.runs.finish(this.runId, {
      status: cancelled ? 'cancelled' : 'failed',
      reason: cancelled ? message : failureReason(failure, this.attempts, this.gaveUp),
      errorCode: code,
      errorMessage: message,
      modelInputs: this.modelInputs(),
      endedAt: this.deps.clock.now().toISOString(),
    });
    return { run: this.run, messages: this.projected };
  }

  /** The last event of every recorded run, whatever happened (no-op when nothing was recorded). */
  emitRunEnd(): void {
    const { run } = this;
    if (!run) return;
    this.deps.emit({
      type: 'run.end',
      threadId: this.context.threadId,
      runId: run.id,
      at: this.deps.clock.now().toISOString(),
      status: run.status === 'running' ? 'failed' : run.status,
      ...(run.reason ? { reason: run.reason } : {}),
      ...(run.errorCode && run.errorCode !== 'RUN_CANCELLED' ? { error: { code: run.errorCode, message: run.errorMessage ?? '' } } : {}),
    });
  }

  private modelInputs(): ModelInputRecord[] {
    return this.deps.modelInputs?.take(this.runId) ?? [];
  }

  private get runId(): string {
    return this.run?.id ?? this.context.runId;
  }
}

/** A run's end reason a person can read: what failed, how often, and why it stopped there. */
function failureReason(failure: ModelFailure, attempts: number, gaveUp: string | undefined): string {
  const what = attempts > 1 ? `the model failed ${attempts} times: ${failure.reason}` : failure.reason;
  return gaveUp ? `${what}; ${gaveUp}` : what;
}

function reasonOf(signal: AbortSignal): string {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason.message : 'cancelled';
}

/** Whether the message with this id is among the list's newest ones (searched from the end: the task is near it, and a long thread is not walked). */
function endsWithId(messages: readonly BaseMessage[], id: string, within = 64): boolean {
  for (let index = messages.length - 1; index >= Math.max(0, messages.length - within); index--) if (messages[index]!.id === id) return true;
  return false;
}
