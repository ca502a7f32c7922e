import { randomUUID } from 'node:crypto';
import { HumanMessage, type BaseMessage } from '@langchain/core/messages';
import { toTaskMessage, type TaskInput } from '../agent/task-message.js';
import type { Logger } from 'pino';
import { VigilError, isVigilError, type ErrorCode } from '../domain/errors.js';
import type { VigilEvent } from '../domain/events.js';
import type { RunContext } from '../domain/run-context.js';
import type { RegisteredGraph } from '../agent/agent-graph.js';
import { runConfig } from '../agent/run-settings.js';
import { InProcessThreadLocks, type ThreadLockService } from './thread-lock.js';
import { projectMessage } from './message-projection.js';
import { resolveRunMeta } from './run-meta.js';
import type { AgentKind, AgentRecord, Clock, EventBus, RunRecord, Storage, StoredMessage } from './ports.js';

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
   * Called with the thread's lock held, before anything is recorded and before any
   * model call: the last word on whether the run happens (caps, budgets, I5) and with
   * what input. `signal` is aborted if a person's message already asked to pre-empt it.
   */
  admit?: (context: RunContext, signal: AbortSignal) => Promise<Admission>;
  /** Called before each retry of a failed model call (a retry is a model call too, I5); false stops retrying. */
  beforeRetry?: (retry: number) => Promise<boolean>;
  /**
   * Called once the task message is in the thread's history (checkpoint and projection),
   * before the model answers: a caller that acknowledges the request before the run ends
   * (a webhook's 202) waits for this, so a crash after the answer loses nothing.
   */
  onInputStored?: () => void;
}

export type Admission = { admitted: true; input?: TaskInput | null } | { admitted: false; reason: string };

export interface RunOutcome {
  run: RunRecord;
  /** Messages this run added to the projection, in order (visible and internal). */
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
}

/** Runs a person's message pre-empts (I8): the agent acting on its own. */
const PREEMPTIBLE_TRIGGERS: ReadonlySet<RunContext['trigger']> = new Set(['autonomy', 'heartbeat']);
export const PREEMPTED_REASON = 'pre-empted by a person\'s message';
export const STOPPING_REASON = 'the server is stopping';

interface ActiveRun {
  runId: string;
  userId: string;
  threadId: string;
  controller: AbortController;
}

/**
 * Starts runs: takes the thread's lock (one run per thread, I8), records the run, drives
 * the graph while streaming events, keeps the message projection in step, and always
 * ends with `run.end` — after success, error or cancel.
 */
export class RunCoordinator {
  private readonly locks: ThreadLockService;
  private readonly active = new Map<string, ActiveRun>(); // runId → run
  private readonly runEndHooks: RunEndHook[] = [];
  private readonly modelRetries: number;
  private readonly retryBackoffMs: number;
  /** Runs between taking and releasing their thread's lock (admission, run, hooks). */
  private critical = 0;
  private stopping = false;
  /** Legacy content-classified messages seen by this process, so their retirement can be tracked. */
  private legacyFallbacks = 0;

  constructor(private readonly deps: RunCoordinatorDependencies) {
    this.locks = deps.locks ?? new InProcessThreadLocks();
    this.modelRetries = deps.modelRetries ?? 2;
    this.retryBackoffMs = deps.retryBackoffMs ?? 500;
  }

  /** Cancel a run of this user; false when no such run is in progress. */
  cancel(userId: string, runId: string): boolean {
    const run = this.active.get(runId);
    if (!run || run.userId !== userId) return false;
    run.controller.abort(new VigilError('RUN_CANCELLED', 'the run was cancelled'));
    return true;
  }

  activeRunOf(threadId: string): string | undefined {
    for (const run of this.active.values()) if (run.threadId === threadId) return run.runId;
    return undefined;
  }

  /** Register a hook called after every run (autonomy schedules the next follow-up there). */
  onRunEnd(hook: RunEndHook): void {
    this.runEndHooks.push(hook);
  }

  /** Refuse new runs, cancel those in flight and wait for them, for a graceful stop. */
  async drain(): Promise<void> {
    this.stopping = true;
    for (const run of this.active.values()) run.controller.abort(new VigilError('RUN_CANCELLED', STOPPING_REASON));
    while (this.active.size > 0 || this.critical > 0) await new Promise((resolve) => setTimeout(resolve, 20));
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
   * graph while streaming events, retry a failing model a bounded number of times, keep
   * the projection in step, and always end with `run.end`.
   */
  async tryRun(request: RunRequest): Promise<RunOutcome | RunDeclined> {
    const { context, agent } = request;
    if (this.stopping) throw new VigilError('RUN_CANCELLED', STOPPING_REASON);
    const registered = this.deps.graphs[agent.kind];
    if (!registered) throw new VigilError('VALIDATION_FAILED', `agents of kind "${agent.kind}" cannot run on this server`);
    // A person is never kept waiting behind the agent talking to itself.
    // (A chat channel's message is a person speaking too.)
    if (context.trigger === 'user' || context.trigger === 'channel') await this.locks.requestYield(context.threadId);
    const lease = request.whenBusy === 'decline' ? await this.locks.tryAcquire(context.threadId) : await this.locks.acquire(context.threadId);
    if (!lease) return { declined: 'thread_busy' };
    this.critical += 1;
    try {
      const controller = new AbortController();
      if (PREEMPTIBLE_TRIGGERS.has(context.trigger)) {
        const preempt = () => controller.abort(new VigilError('RUN_CANCELLED', PREEMPTED_REASON));
        if (lease.yieldRequested.aborted) preempt();
        else lease.yieldRequested.addEventListener('abort', preempt, { once: true });
      }
      let input = request.input;
      if (request.admit) {
        const admission = await request.admit(context, controller.signal);
        if (!admission.admitted) return { declined: admission.reason };
        if (admission.input !== undefined) input = admission.input;
      }
      if (this.stopping) throw new VigilError('RUN_CANCELLED', STOPPING_REASON);
      const outcome = await this.execute(request, registered, controller, input);
      await this.afterRun({ context, agent, outcome, supersededByPerson: lease.yieldRequested.aborted, signal: lease.yieldRequested });
      return outcome;
    } finally {
      this.critical -= 1;
      await lease.release();
    }
  }

  private async execute(request: RunRequest, registered: RegisteredGraph, controller: AbortController, input: TaskInput | null): Promise<RunOutcome> {
    const { context, agent } = request;
    const { storage, clock } = this.deps;
    const log = this.deps.logger.child({ threadId: context.threadId, runId: context.runId });
    const onCallerAbort = () => controller.abort(new VigilError('RUN_CANCELLED', 'the client went away'));
    request.signal?.addEventListener('abort', onCallerAbort, { once: true });
    if (request.signal?.aborted) onCallerAbort();
    const modelSpec = agent.model ?? this.deps.defaultModel;
    const modelName = this.deps.modelLabel(modelSpec);
    const projected: StoredMessage[] = [];
    let run: RunRecord | undefined;
    let attempts = 0;
    /** The graph's last state, for `endReason` (a planner that stopped at a bound says why). */
    let lastValues: unknown;
    // Validated and redacted once: the run record, the log and the envelope share this copy.
    const runMeta = resolveRunMeta(context);
    if (!runMeta.valid) log.warn({ trigger: context.trigger, issues: runMeta.issues }, 'run meta failed its schema; only the core keys are kept');
    try {
      run = await storage.runs.create({
        id: context.runId,
        threadId: context.threadId,
        userId: context.userId,
        agentId: context.agentId,
        trigger: context.trigger,
        meta: runMeta.meta,
        correlationId: context.correlationId,
        model: modelName,
        requestedAt: context.requestedAt,
        startedAt: clock.now().toISOString(),
      });
      this.active.set(run.id, { runId: run.id, userId: context.userId, threadId: context.threadId, controller });
      log.info({ trigger: context.trigger, model: modelName, meta: runMeta.meta, resume: input === null }, 'run started');
      this.emit({ type: 'run.start', threadId: context.threadId, runId: run.id, at: clock.now().toISOString(), trigger: context.trigger, model: modelName });

      const settings = {
        runId: run.id,
        threadId: context.threadId,
        userId: context.userId,
        agentId: context.agentId,
        trigger: context.trigger,
        model: modelSpec,
        systemPrompt: agent.systemPrompt,
        meta: runMeta.meta,
      };
      // An id of its own, so that a retry re-sends the same message (replaced, not repeated).
      const task = input === null ? null : withId(toTaskMessage(input));
      // Most steps add no message (memory recall, planner bookkeeping): only a state whose
      // message list grew needs the projection read and written.
      let projectedLength = -1;
      let inputStored = false;
      for (;;) {
        attempts += 1;
        try {
          // durability 'sync': a step's state is streamed only once its checkpoint is written.
          // With LangGraph's default ('async') the projection below could be written before
          // the checkpoint it mirrors; a crash between the two left history ahead of the
          // checkpoint, and the count-based projection then skipped the thread's next
          // message (the crash-safety e2e test lost an accepted webhook delivery so).
          const stream = await registered.graph.stream(task === null ? null : { messages: [task] }, {
            ...runConfig(settings, controller.signal),
            streamMode: ['messages', 'values'],
            durability: 'sync',
          });
          for await (const [mode, chunk] of stream as AsyncIterable<[string, unknown]>) {
            if (mode === 'values') {
              lastValues = chunk;
              const messages = messagesOf(chunk);
              if (messages.length === projectedLength) continue;
              projected.push(...(await this.project(context, messages, run.id)));
              projectedLength = messages.length;
              if (task !== null && !inputStored && messages.some((message) => message.id === task.id)) {
                inputStored = true;
                request.onInputStored?.();
              }
            } else if (mode === 'messages') {
              const [message, metadata] = chunk as [BaseMessage, Record<string, unknown>];
              if (!registered.replyNodes.has(String(metadata?.langgraph_node))) continue;
              const delta = typeof message.content === 'string' ? message.content : '';
              if (delta) this.emit({ type: 'message.delta', threadId: context.threadId, runId: run.id, at: clock.now().toISOString(), messageId: message.id ?? run.id, delta });
            }
          }
          break;
        } catch (error) {
          if (controller.signal.aborted || attempts > this.modelRetries || (isVigilError(error) && error.status < 500)) throw error;
          const backoffMs = this.retryBackoffMs * 2 ** (attempts - 1);
          log.warn({ err: error, attempt: attempts, retryInMs: backoffMs }, 'model call failed; retrying');
          if (request.beforeRetry && !(await request.beforeRetry(attempts))) {
            log.warn({ attempt: attempts }, 'no retry: the run may not make another model call');
            throw error;
          }
          await sleep(backoffMs, controller.signal);
        }
      }
      run = await storage.runs.finish(run.id, { status: 'succeeded', reason: registered.endReason?.(lastValues) ?? null, endedAt: clock.now().toISOString() });
      log.info({ status: run.status }, 'run ended');
      return { run, messages: projected };
    } catch (error) {
      const cancelled = controller.signal.aborted;
      const code: ErrorCode = cancelled ? 'RUN_CANCELLED' : isVigilError(error) ? error.code : 'MODEL_ERROR';
      const message = cancelled ? reasonOf(controller.signal) : error instanceof Error ? error.message : String(error);
      if (cancelled) log.info({ reason: message }, 'run cancelled');
      else log.error({ err: error, attempts }, 'run failed');
      if (!run) throw error;
      // The input may already be in the checkpoint: keep the projection in step with it.
      try {
        const state = await registered.graph.getState(runConfig({ ...placeholderSettings(context), model: modelSpec }));
        projected.push(...(await this.project(context, messagesOf(state.values), run.id)));
      } catch (projectionError) {
        log.error({ err: projectionError }, 'could not bring the message projection in step after a failed run');
      }
      run = await storage.runs.finish(run.id, {
        status: cancelled ? 'cancelled' : 'failed',
        reason: cancelled ? message : attempts > 1 ? `the model failed ${attempts} times` : null,
        errorCode: code,
        errorMessage: message,
        endedAt: clock.now().toISOString(),
      });
      return { run, messages: projected };
    } finally {
      request.signal?.removeEventListener('abort', onCallerAbort);
      if (run) {
        this.active.delete(run.id);
        this.emit({
          type: 'run.end',
          threadId: context.threadId,
          runId: run.id,
          at: clock.now().toISOString(),
          status: run.status === 'running' ? 'failed' : run.status,
          ...(run.reason ? { reason: run.reason } : {}),
          ...(run.errorCode && run.errorCode !== 'RUN_CANCELLED' ? { error: { code: run.errorCode, message: run.errorMessage ?? '' } } : {}),
        });
      }
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

  /** Bring the thread's projection in step with its checkpoint (after a crash left it behind). */
  async syncProjection(agent: AgentRecord, context: RunContext, runId: string | null): Promise<StoredMessage[]> {
    const registered = this.deps.graphs[agent.kind];
    if (!registered) return [];
    const state = await registered.graph.getState(runConfig({ ...placeholderSettings(context), model: agent.model ?? this.deps.defaultModel }));
    return this.project(context, messagesOf(state.values), runId ?? context.runId);
  }

  /** Append state messages the projection lacks; announce the visible ones. */
  private async project(context: RunContext, messages: readonly BaseMessage[], runId: string): Promise<StoredMessage[]> {
    const thread = await this.deps.storage.threads.get(context.userId, context.threadId);
    if (!thread || messages.length <= thread.messageCount) return [];
    const now = this.deps.clock.now().toISOString();
    const fresh = messages.slice(thread.messageCount).map((message) => projectMessage(message, runId, now));
    for (const { row, classification } of fresh) {
      if (classification.unknownTriggerType !== undefined) {
        this.deps.logger.warn({ threadId: context.threadId, runId, messageId: row.id, triggerType: classification.unknownTriggerType }, 'Invalid trigger type on a synthetic message');
      }
      if (classification.reason === 'legacy_content') {
        this.legacyFallbacks += 1;
        this.deps.logger.warn({ threadId: context.threadId, runId, messageId: row.id, legacyFallbacks: this.legacyFallbacks }, 'Message classified internal by the legacy [AUTONOMOUS_FOLLOWUP: content fallback');
      }
    }
    const stored = await this.deps.storage.threads.appendMessages(context.threadId, fresh.map((entry) => entry.row), now);
    for (const message of stored) {
      if (message.visibility !== 'user') {
        this.deps.logger.debug({ threadId: context.threadId, runId, messageId: message.id, triggerType: message.additionalKwargs.trigger_type }, 'internal message kept out of client streams');
        continue;
      }
      this.emit({
        type: 'message.end',
        threadId: context.threadId,
        runId,
        at: now,
        message: {
          id: message.id,
          role: message.type === 'human' ? 'user' : 'assistant',
          content: message.content,
          createdAt: message.createdAt,
          metadata: publicMetadataOf(message),
        },
      });
    }
    return stored;
  }

  private emit(event: VigilEvent): void {
    this.deps.events.publish(event);
  }
}

/** What a person may see of a visible message's metadata: the model that wrote it. */
export function publicMetadataOf(message: Pick<StoredMessage, 'type' | 'responseMetadata' | 'runId'>): Record<string, unknown> {
  const metadata: Record<string, unknown> = {};
  if (message.runId) metadata.runId = message.runId;
  const model = message.responseMetadata.model_name ?? message.responseMetadata.model;
  if (message.type === 'ai' && typeof model === 'string') metadata.model = model;
  if (message.responseMetadata.demo === true) metadata.demo = true;
  return metadata;
}

function messagesOf(values: unknown): BaseMessage[] {
  const messages = (values as { messages?: unknown } | null)?.messages;
  return Array.isArray(messages) ? (messages as BaseMessage[]) : [];
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

function sleep(milliseconds: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, milliseconds);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

function placeholderSettings(context: RunContext) {
  return { runId: context.runId, threadId: context.threadId, userId: context.userId, agentId: context.agentId, trigger: context.trigger, systemPrompt: '' };
}
