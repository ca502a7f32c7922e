import { randomUUID } from 'node:crypto';
import type { BaseMessage, HumanMessage } from '@langchain/core/messages';
import type { Logger } from 'pino';
import type { RegisteredGraph } from '../../agent/agent-graph.js';
import { runConfig, type RunSettings } from '../../agent/run-settings.js';
import { toTaskMessage, type TaskInput } from '../../agent/task-message.js';
import { isVigilError, type ErrorCode } from '../../domain/errors.js';
import type { VigilEvent } from '../../domain/events.js';
import type { RunContext } from '../../domain/run-context.js';
import type { Clock, RunRecord, Storage, StoredMessage } from '../ports.js';
import { resolveRunMeta } from '../run-meta.js';
import type { MessageProjector } from './message-projector.js';
import { retryDelay, sleep, type RetryPolicy } from './retry-policy.js';
import type { RunOutcome, RunRequest } from './run-request.js';
import { messagesOf, streamAttempt } from './stream-attempt.js';

export interface RunExecutionDependencies {
  storage: Storage;
  clock: Clock;
  logger: Logger;
  projector: MessageProjector;
  retry: RetryPolicy;
  emit: (event: VigilEvent) => void;
  /** The model spec of the run (the agent's, or the server's default) and its label. */
  modelSpec: string;
  modelName: string;
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
  /** Messages this run added to the projection, in order. */
  readonly projected: StoredMessage[] = [];
  run: RunRecord | undefined;
  attempts = 0;
  /** The graph's last state, for `endReason` (a planner that stopped at a bound says why). */
  private lastValues: unknown;
  /** Length of the last state's message list that was projected (-1: none yet). */
  private projectedLength = -1;
  private readonly settings: RunSettings;

  constructor(
    private readonly deps: RunExecutionDependencies,
    private readonly request: RunRequest,
    private readonly registered: RegisteredGraph,
    readonly controller: AbortController,
  ) {
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
    const task = input === null ? null : withId(toTaskMessage(input));
    const graphInput = task === null ? null : { messages: [task] };
    for (;;) {
      this.attempts += 1;
      try {
        await streamAttempt(this.registered, graphInput, runConfig(this.settings, this.controller.signal), {
          onValues: (values) => this.onValues(values),
          onReplyChunk: (message) => this.onReplyChunk(message),
        });
        return;
      } catch (error) {
        await this.beforeRetry(error);
      }
    }
  }

  /** Throws `error` when the run must give up; otherwise waits out the backoff. */
  private async beforeRetry(error: unknown): Promise<void> {
    const delayMs = retryDelay(error, this.attempts, this.deps.retry, this.controller.signal);
    if (delayMs === null) throw error;
    this.log.warn({ err: error, attempt: this.attempts, retryInMs: delayMs }, 'model call failed; retrying');
    if (this.request.beforeRetry && !(await this.request.beforeRetry(this.attempts))) {
      this.log.warn({ attempt: this.attempts }, 'no retry: the run may not make another model call');
      throw error;
    }
    await sleep(delayMs, this.controller.signal);
  }

  /** Most steps add no message (memory recall, planner bookkeeping): only a grown message list is projected. */
  private async onValues(values: unknown): Promise<void> {
    this.lastValues = values;
    const messages = messagesOf(values);
    if (messages.length === this.projectedLength) return;
    this.projected.push(...(await this.deps.projector.project(this.context, messages, this.runId)));
    this.projectedLength = messages.length;
  }

  private onReplyChunk(message: BaseMessage): void {
    const delta = typeof message.content === 'string' ? message.content : '';
    if (!delta) return;
    this.deps.emit({ type: 'message.delta', threadId: this.context.threadId, runId: this.runId, at: this.deps.clock.now().toISOString(), messageId: message.id ?? this.runId, delta });
  }

  /** The graph ended normally. */
  async finishRun(): Promise<RunOutcome> {
    // A graph that stopped at interrupt() waits for a person: `interrupted`, never `succeeded` (I16).
    const state = await this.registered.graph.getState(runConfig(this.settings));
    const waiting = (state.tasks ?? []).some((task) => (task.interrupts?.length ?? 0) > 0);
    const end = waiting ? { status: 'interrupted' as const, reason: 'waiting for a person\'s approval' } : { status: 'succeeded' as const, reason: this.registered.endReason?.(this.lastValues) ?? null };
    const run = await this.deps.storage.runs.finish(this.runId, { ...end, endedAt: this.deps.clock.now().toISOString() });
    this.run = run;
    this.log.info({ status: run.status }, 'run ended');
    return { run, messages: this.projected };
  }

  /** The run failed or was cancelled: bring the projection in step with the checkpoint and record why. */
  async failRun(error: unknown): Promise<RunOutcome> {
    const cancelled = this.controller.signal.aborted;
    const code: ErrorCode = cancelled ? 'RUN_CANCELLED' : isVigilError(error) ? error.code : 'MODEL_ERROR';
    const message = cancelled ? reasonOf(this.controller.signal) : error instanceof Error ? error.message : String(error);
    if (cancelled) this.log.info({ reason: message }, 'run cancelled');
    else this.log.error({ err: error, attempts: this.attempts }, 'run failed');
    if (!this.run) throw error;
    // The input may already be in the checkpoint: keep the projection in step with it.
    try {
      const state = await this.registered.graph.getState(runConfig(this.settings));
      this.projected.push(...(await this.deps.projector.project(this.context, messagesOf(state.values), this.runId)));
    } catch (projectionError) {
      this.log.error({ err: projectionError }, 'could not bring the message projection in step after a failed run');
    }
    this.run = await this.deps.storage.runs.finish(this.runId, {
      status: cancelled ? 'cancelled' : 'failed',
      reason: cancelled ? message : this.attempts > 1 ? `the model failed ${this.attempts} times` : null,
      errorCode: code,
      errorMessage: message,
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

  private get runId(): string {
    return this.run?.id ?? this.context.runId;
  }
}

function reasonOf(signal: AbortSignal): string {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason.message : 'cancelled';
}

/** The task message with an id (a string becomes a message without metadata: a real one). */
function withId(message: HumanMessage): HumanMessage {
  if (!message.id) message.id = randomUUID();
  return message;
}
