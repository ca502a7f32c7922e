import type { BaseMessage } from '@langchain/core/messages';
import { toTaskMessage, type TaskInput } from '../agent/task-message.js';
import type { Logger } from 'pino';
import { VigilError, isVigilError, type ErrorCode } from '../domain/errors.js';
import type { VigilEvent } from '../domain/events.js';
import type { RunContext } from '../domain/run-context.js';
import type { RegisteredGraph } from '../agent/agent-graph.js';
import { runConfig } from '../agent/run-settings.js';
import { ThreadLocks } from './thread-lock.js';
import { projectMessage } from './message-projection.js';
import type { AgentKind, AgentRecord, Clock, EventBus, RunRecord, Storage, StoredMessage } from './ports.js';

export interface RunRequest {
  context: RunContext;
  agent: AgentRecord;
  /** The task: a person's text or message, or a synthetic message with metadata. */
  input: TaskInput;
  /** The caller's signal (e.g. the HTTP client went away); cancels the run. */
  signal?: AbortSignal;
}

export interface RunOutcome {
  run: RunRecord;
  /** Messages this run added to the projection, in order (visible and internal). */
  messages: StoredMessage[];
}

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
}

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
  private readonly locks = new ThreadLocks();
  private readonly active = new Map<string, ActiveRun>(); // runId → run
  /** Legacy content-classified messages seen by this process, so their retirement can be tracked. */
  private legacyFallbacks = 0;

  constructor(private readonly deps: RunCoordinatorDependencies) {}

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

  /** Wait for every run in flight, for a graceful stop. */
  async drain(): Promise<void> {
    for (const run of this.active.values()) run.controller.abort(new VigilError('RUN_CANCELLED', 'the server is stopping'));
    while (this.active.size > 0) await new Promise((resolve) => setTimeout(resolve, 20));
  }

  async run(request: RunRequest): Promise<RunOutcome> {
    const { context, agent } = request;
    const { storage, events, clock } = this.deps;
    const log = this.deps.logger.child({ threadId: context.threadId, runId: context.runId });
    const release = await this.locks.acquire(context.threadId);
    const controller = new AbortController();
    const onCallerAbort = () => controller.abort(new VigilError('RUN_CANCELLED', 'the client went away'));
    request.signal?.addEventListener('abort', onCallerAbort, { once: true });
    if (request.signal?.aborted) onCallerAbort();
    const registered = this.deps.graphs[agent.kind];
    if (!registered) throw new VigilError('VALIDATION_FAILED', `agents of kind "${agent.kind}" cannot run on this server`);
    const modelSpec = agent.model ?? this.deps.defaultModel;
    const modelName = this.deps.modelLabel(modelSpec);
    const projected: StoredMessage[] = [];
    let run: RunRecord | undefined;
    try {
      run = await storage.runs.create({
        id: context.runId,
        threadId: context.threadId,
        userId: context.userId,
        agentId: context.agentId,
        trigger: context.trigger,
        meta: { ...context.meta },
        correlationId: context.correlationId,
        model: modelName,
        requestedAt: context.requestedAt,
        startedAt: clock.now().toISOString(),
      });
      this.active.set(run.id, { runId: run.id, userId: context.userId, threadId: context.threadId, controller });
      log.info({ trigger: context.trigger, model: modelName }, 'run started');
      this.emit({ type: 'run.start', threadId: context.threadId, runId: run.id, at: clock.now().toISOString(), trigger: context.trigger, model: modelName });

      const settings = {
        runId: run.id,
        threadId: context.threadId,
        userId: context.userId,
        agentId: context.agentId,
        trigger: context.trigger,
        model: modelSpec,
        systemPrompt: agent.systemPrompt,
      };
      const stream = await registered.graph.stream(
        { messages: [toTaskMessage(request.input)] },
        { ...runConfig(settings, controller.signal), streamMode: ['messages', 'values'] },
      );
      for await (const [mode, chunk] of stream as AsyncIterable<[string, unknown]>) {
        if (mode === 'values') {
          projected.push(...(await this.project(context, messagesOf(chunk), run.id)));
        } else if (mode === 'messages') {
          const [message, metadata] = chunk as [BaseMessage, Record<string, unknown>];
          if (!registered.replyNodes.has(String(metadata?.langgraph_node))) continue;
          const delta = typeof message.content === 'string' ? message.content : '';
          if (delta) this.emit({ type: 'message.delta', threadId: context.threadId, runId: run.id, at: clock.now().toISOString(), messageId: message.id ?? run.id, delta });
        }
      }
      run = await storage.runs.finish(run.id, { status: 'succeeded', endedAt: clock.now().toISOString() });
      log.info({ status: run.status }, 'run ended');
      return { run, messages: projected };
    } catch (error) {
      const cancelled = controller.signal.aborted;
      const code: ErrorCode = cancelled ? 'RUN_CANCELLED' : isVigilError(error) ? error.code : 'MODEL_ERROR';
      const message = cancelled ? reasonOf(controller.signal) : error instanceof Error ? error.message : String(error);
      if (cancelled) log.info({ reason: message }, 'run cancelled');
      else log.error({ err: error }, 'run failed');
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
        reason: cancelled ? message : null,
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
      release();
    }
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

function placeholderSettings(context: RunContext) {
  return { runId: context.runId, threadId: context.threadId, userId: context.userId, agentId: context.agentId, trigger: context.trigger, systemPrompt: '' };
}
