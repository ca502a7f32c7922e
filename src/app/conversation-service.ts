import { randomUUID } from 'node:crypto';
import { HumanMessage } from '@langchain/core/messages';
import type { Logger } from 'pino';
import { VigilError } from '../domain/errors.js';
import type { MessageContent } from '../domain/message-content.js';
import { isRealUserMessage } from '../domain/message-metadata.js';
import type { RunContext } from '../domain/run-context.js';
import type { AgentService } from './agent-service.js';
import type { Admission, RunCoordinator, RunDeclined, RunOutcome } from './run-coordinator.js';
import type { AlsoWithinThread, Clock, MessagePage, RunRecord, Storage, ThreadPage, ThreadRecord } from './ports.js';
import type { RunCancellations } from './runs/run-cancellation.js';

/** A thread runs one run at a time (I8): one still running is among its newest records. */
const RECENT_RUNS = 20;
const DELETED_REASON = 'the thread was deleted';

export interface HistoryQuery {
  includeInternal: boolean;
  limit: number;
  cursor?: string | undefined;
}

export interface SendOptions {
  /** Chosen by the caller so it can follow the run's events before the run starts. */
  runId?: string;
  correlationId?: string;
  signal?: AbortSignal;
  /**
   * Told once the message is accepted: received (I6) and its run (`runId`) requested, before
   * the run waits for the thread; `messageId` is the id the message is stored under.
   */
  onAccepted?: (accepted: { runId: string; messageId: string }) => void;
  /**
   * Asked once the run holds its thread, before anything of it is written: false, and it
   * never starts (its message is not added) and the call fails RUN_CANCELLED. For a caller
   * whose own record of the run may have been ended meanwhile by another process (a
   * LangGraph protocol run judged orphaned), so that the run and that record agree.
   */
  claim?: () => Promise<boolean>;
}

/** Called when a person's message is received, before it waits for the thread or reaches a model. */
export type UserMessageHook = (thread: ThreadRecord, receivedAt: string) => Promise<void>;

/** Called once a thread is deleted: what was kept for it alone goes (its events). */
export type ThreadGoneHook = (thread: ThreadRecord) => Promise<void>;
/** A reason why a system-started run must not start on the thread now, or null. */
export type TriggeredRunGuard = (threadId: string, trigger: RunContext['trigger']) => Promise<string | null>;

/** What a system-started run may add: how it treats a busy thread, its admission check, its retry gate. */
export interface TriggeredRunGate {
  whenBusy?: 'wait' | 'decline';
  admit?: (context: RunContext, signal: AbortSignal) => Promise<Admission>;
  beforeRetry?: (retry: number) => Promise<boolean>;
  /** Told once the run's task message is stored in the thread (see RunRequest.onInputStored). */
  onInputStored?: () => void;
}

/**
 * How long a cancel naming a run nobody here has recorded looks for the record another
 * instance writes when it calls the run off (it hears the cancel within milliseconds), and
 * how often. An id no instance has is answered not found after this wait.
 */
const REMOTE_CANCEL_WAIT_MS = 2_000;
const REMOTE_CANCEL_POLL_MS = 50;

/** Threads, their history, and a person's message: the use cases of the chat API. */
export class ConversationService {
  private readonly userMessageHooks: UserMessageHook[] = [];
  private readonly beforeUserRunHooks: UserMessageHook[] = [];
  private readonly threadGoneHooks: ThreadGoneHook[] = [];
  private readonly triggeredRunGuards: TriggeredRunGuard[] = [];
  private cancellations: RunCancellations | undefined;

  constructor(
    private readonly storage: Storage,
    private readonly agents: AgentService,
    private readonly coordinator: RunCoordinator,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  /**
   * `id`: chosen by a client (the LangGraph protocol lets it); otherwise a new UUID.
   * `alsoWithin`: what is written beside the thread (the protocol's metadata, its first
   * run's row), in the same transaction: should it fail, no thread is left (I11).
   */
  async createThread(userId: string, input: { agentId?: string | undefined; title?: string | undefined; id?: string | undefined; alsoWithin?: AlsoWithinThread | undefined }): Promise<ThreadRecord> {
    const agent = input.agentId ? await this.agents.get(userId, input.agentId) : await this.agents.getOrCreateDefault(userId);
    return this.storage.threads.create({ id: input.id ?? randomUUID(), userId, agentId: agent.id, title: input.title ?? null }, this.clock.now().toISOString(), input.alsoWithin);
  }

  /** Register a hook run on receipt of every person's message (autonomy cancels the thread's timers there, I6). */
  onUserMessage(hook: UserMessageHook): void {
    this.userMessageHooks.push(hook);
  }

  /**
   * Register a hook run after every on-receipt hook, right before a person's message's run
   * is started: work that may take a while (a decided tool step resumed, model calls and
   * all) and must not hold up what receipt does at once (I6).
   */
  beforeUserRun(hook: UserMessageHook): void {
    this.beforeUserRunHooks.push(hook);
  }

  private async receiveUserMessage(thread: ThreadRecord, receivedAt: string): Promise<void> {
    for (const hook of this.userMessageHooks) await hook(thread, receivedAt);
    for (const hook of this.beforeUserRunHooks) await hook(thread, receivedAt);
  }

  /** Register cleanup run after a thread is deleted (a failure there is logged: the thread is gone either way). */
  onThreadGone(hook: ThreadGoneHook): void {
    this.threadGoneHooks.push(hook);
  }

  async renameThread(userId: string, threadId: string, title: string | null): Promise<ThreadRecord> {
    const thread = await this.storage.threads.rename(userId, threadId, title);
    if (!thread) throw new VigilError('THREAD_NOT_FOUND', `no thread "${threadId}"`);
    return thread;
  }

  /**
   * Delete a thread: its runs are called off, then the thread goes in one transaction with
   * its history and checkpoints (one store) and what other features keep of it or would
   * start on it (its pending follow-ups, bound schedules and webhooks: see
   * ThreadRepository.delete), so a deletion that fails leaves all of it as it was. Then the
   * saver forgets what it held of the thread. Runs stay as the record of what happened.
   */
  async deleteThread(userId: string, threadId: string): Promise<void> {
    const thread = await this.getThread(userId, threadId);
    // A run of the thread on another instance is called off there (its record says it runs);
    // this process's own, and the wait for the thread, are withThreadCleared's.
    for (const run of await this.storage.runs.listByThread(userId, threadId, { limit: RECENT_RUNS })) {
      if (run.status === 'running') await this.cancelAnywhere(userId, run.id, DELETED_REASON);
    }
    const gone = new VigilError('THREAD_NOT_FOUND', `no thread "${threadId}"`);
    await this.coordinator.withThreadCleared(userId, threadId, { cancelled: DELETED_REASON, gone }, async () => {
      if (!(await this.storage.threads.delete(userId, threadId))) throw gone;
      await this.storage.checkpointer.deleteThread(threadId);
    });
    this.logger.info({ threadId }, 'thread deleted');
    for (const hook of this.threadGoneHooks) {
      try {
        await hook(thread);
      } catch (error) {
        this.logger.error({ err: error, threadId }, 'cleanup after a thread\'s deletion failed');
      }
    }
  }

  /** Delete every thread of an agent (the agent is being deleted). */
  async deleteThreadsOf(userId: string, agentId: string): Promise<void> {
    for (const threadId of await this.storage.threads.listIdsByAgent(userId, agentId)) await this.deleteThread(userId, threadId);
  }

  /** Register a check every system-started run passes, under the thread's lock (approvals: a waiting thread takes no autonomous run). */
  guardTriggeredRuns(guard: TriggeredRunGuard): void {
    this.triggeredRunGuards.push(guard);
  }

  listThreads(userId: string, options: { limit: number; cursor?: string | undefined }): Promise<ThreadPage> {
    return this.storage.threads.list(userId, options);
  }

  /** Whether the user owns the thread now (a stream checking its thread was not deleted under it). */
  async ownsThread(userId: string, threadId: string): Promise<boolean> {
    return (await this.findThread(userId, threadId)) !== undefined;
  }

  /** The owner's thread, or undefined — also for another user's thread (I12). */
  findThread(userId: string, threadId: string): Promise<ThreadRecord | undefined> {
    return this.storage.threads.get(userId, threadId);
  }

  /** The owner's thread, or THREAD_NOT_FOUND — also for another user's thread (I12). */
  async getThread(userId: string, threadId: string): Promise<ThreadRecord> {
    const thread = await this.findThread(userId, threadId);
    if (!thread) throw new VigilError('THREAD_NOT_FOUND', `no thread "${threadId}"`);
    return thread;
  }

  /**
   * A page of history. People see visible messages only (I2); the owner may ask for
   * internal ones too, each marked as such.
   */
  async history(userId: string, threadId: string, query: HistoryQuery): Promise<MessagePage> {
    const thread = await this.getThread(userId, threadId);
    const page = await this.storage.threads.history(userId, threadId, { visibility: query.includeInternal ? 'all' : 'user', limit: query.limit, cursor: query.cursor });
    this.logger.info(
      {
        threadId,
        totalMessages: thread.messageCount,
        filteredCount: thread.messageCount - thread.visibleCount,
        visibleMessages: thread.visibleCount,
        pageSize: page.messages.length,
        includeInternal: query.includeInternal,
      },
      'Extracted messages from thread history',
    );
    const first = page.messages[0];
    if (!query.includeInternal && first && this.logger.isLevelEnabled('debug') && thread.visibleCount < thread.messageCount) {
      // The internal messages this page's window left out, one DEBUG line each (seed 000).
      const filtered = await this.storage.threads.history(userId, threadId, { visibility: 'internal', limit: 200, cursor: query.cursor, fromSeq: first.seq });
      for (const message of filtered.messages) {
        this.logger.debug(
          { threadId, messageId: message.id, triggerType: message.additionalKwargs.trigger_type, triggerReason: message.additionalKwargs.trigger_reason },
          'Filtered synthetic message from thread history',
        );
      }
    }
    return page;
  }

  /** A person's message: starts a user-triggered run and waits for its end. */
  async sendMessage(userId: string, threadId: string, content: MessageContent, options: SendOptions = {}): Promise<RunOutcome> {
    const thread = await this.getThread(userId, threadId);
    const agent = await this.agents.get(userId, thread.agentId);
    const context = { ...this.newRunContext(thread, 'user', options.correlationId), ...(options.runId ? { runId: options.runId } : {}) };
    // A person's message never carries metadata: clients cannot set additional_kwargs.
    const messageId = randomUUID();
    const input = new HumanMessage({ id: messageId, content: content as HumanMessage['content'] });
    // On receipt, not when processed (I6): before waiting for the thread or calling a model.
    await this.receiveUserMessage(thread, context.requestedAt);
    const { onAccepted } = options;
    const accepted = onAccepted ? { onRequested: () => onAccepted({ runId: context.runId, messageId }) } : {};
    const request = { context, agent, input, ...accepted, ...(options.signal ? { signal: options.signal } : {}) };
    const { claim } = options;
    if (claim === undefined) return this.coordinator.run(request);
    const outcome = await this.coordinator.tryRun({ ...request, whenBusy: 'wait', admit: async () => ((await claim()) ? { admitted: true } : { admitted: false, reason: 'not_claimed' }) });
    if ('declined' in outcome) throw new VigilError('RUN_CANCELLED', 'the run was ended before it started');
    return outcome;
  }

  /**
   * A run the system starts on a thread (a timer, a schedule, a webhook): the input is a
   * synthetic message whose metadata says so, and the run carries its trigger and meta.
   */
  async runTriggered(
    userId: string,
    threadId: string,
    // runId: chosen by a caller that answers before the run ends (a webhook's 202).
    request: { trigger: Exclude<RunContext['trigger'], 'user'>; input: HumanMessage; meta?: Record<string, unknown>; correlationId?: string; runId?: string },
    options: Pick<TriggeredRunGate, 'onInputStored'> = {},
  ): Promise<RunOutcome> {
    const outcome = await this.tryRunTriggered(userId, threadId, request, options);
    if ('declined' in outcome) {
      if (outcome.declined === 'awaiting_approval') throw new VigilError('THREAD_AWAITING_APPROVAL', 'the thread waits for a decision on a tool call; this run was skipped');
      throw new VigilError('INTERNAL', `run declined: ${outcome.declined}`); // unreachable without a gate
    }
    return outcome;
  }

  /**
   * runTriggered with a gate: a timer's run declines (nothing recorded) when its thread
   * is busy or its admission check says no, and its model retries pass a budget check.
   */
  async tryRunTriggered(
    userId: string,
    threadId: string,
    request: { trigger: Exclude<RunContext['trigger'], 'user'>; input: HumanMessage | null; meta?: Record<string, unknown>; correlationId?: string; runId?: string },
    gate: TriggeredRunGate,
  ): Promise<RunOutcome | RunDeclined> {
    const thread = await this.getThread(userId, threadId);
    const agent = await this.agents.get(userId, thread.agentId);
    const context = {
      ...this.newRunContext(thread, request.trigger, request.correlationId),
      ...(request.runId ? { runId: request.runId } : {}),
      meta: { ...(request.meta ?? {}) },
    };
    // A person speaking through a chat channel (Telegram) is a person's message too: on receipt (I6).
    if (request.input !== null && isRealUserMessage({ type: 'human', content: request.input.content, additional_kwargs: request.input.additional_kwargs })) {
      await this.receiveUserMessage(thread, context.requestedAt);
    }
    const guards = this.triggeredRunGuards;
    const admit = async (admitted: RunContext, signal: AbortSignal): Promise<Admission> => {
      for (const guard of guards) {
        const reason = await guard(admitted.threadId, admitted.trigger);
        if (reason !== null) {
          this.logger.info({ threadId: admitted.threadId, trigger: admitted.trigger, reason }, 'a system-started run was skipped');
          return { admitted: false, reason };
        }
      }
      return gate.admit ? gate.admit(admitted, signal) : { admitted: true };
    };
    return this.coordinator.tryRun({ context, agent, input: request.input, ...gate, admit });
  }

  /** Cancel a run in progress; RUN_NOT_FOUND when it is not this user's or already over. */
  async cancelRun(userId: string, runId: string, reason?: string): Promise<RunRecord> {
    const recorded = await this.storage.runs.get(userId, runId);
    if (recorded === undefined) {
      // A run waiting for its thread behind another has no record until it starts or is called
      // off, but its id is known (a WebSocket send's acknowledgement hands it out): called off
      // here it never starts, and its record says it was cancelled.
      const waiting = this.coordinator.cancelWaiting(userId, runId, reason);
      if (waiting !== undefined) return waiting;
      // It may wait on another instance: every instance hears the cancel, and the one that has
      // it (for this user only, I12) records it, cancelled, within moments.
      if (this.cancellations !== undefined) {
        await this.cancellations.request({ runId, userId });
        const elsewhere = await this.recordSoon(userId, runId);
        if (elsewhere !== undefined) return elsewhere;
      }
    }
    // Recorded, or started since it was looked for.
    const run = recorded ?? (await this.getRun(userId, runId));
    if (run.status === 'running') await this.cancelAnywhere(userId, runId, reason);
    return run;
  }

  /**
   * Cancel a run of this user wherever it is: in progress or waiting for its thread, in
   * this process or, when this process does not have it, on another instance (a cancel
   * reaches whichever instance the client reached). The caller has checked that the run is
   * the user's; another instance cancels it for that user only (I12).
   */
  async cancelAnywhere(userId: string, runId: string, reason?: string): Promise<void> {
    if (!this.coordinator.cancel(userId, runId, reason)) await this.cancellations?.request({ runId, userId });
  }

  /**
   * The run's record once one is written, looked for until REMOTE_CANCEL_WAIT_MS have passed
   * (then undefined: no instance has such a run of this user).
   */
  private async recordSoon(userId: string, runId: string): Promise<RunRecord | undefined> {
    const deadline = Date.now() + REMOTE_CANCEL_WAIT_MS;
    for (;;) {
      const run = await this.storage.runs.get(userId, runId);
      if (run !== undefined || Date.now() >= deadline) return run;
      await new Promise((resolve) => setTimeout(resolve, REMOTE_CANCEL_POLL_MS));
    }
  }

  /** Cancels that reach the other instances (PostgreSQL); this instance then hears theirs. */
  async cancelAcrossInstances(cancellations: RunCancellations): Promise<() => void> {
    this.cancellations = cancellations;
    return cancellations.listen((cancel) => this.coordinator.cancelNowOrWhenRequested(cancel.userId, cancel.runId));
  }

  /** Whether the run added any message to its thread (for a webhook: whether its task was stored). */
  async runAddedMessages(userId: string, run: RunRecord): Promise<boolean> {
    return this.storage.threads.hasMessagesOfRun(userId, run.threadId, run.id);
  }

  async getRun(userId: string, runId: string): Promise<RunRecord> {
    const run = await this.storage.runs.get(userId, runId);
    if (!run) throw new VigilError('RUN_NOT_FOUND', `no run "${runId}"`);
    return run;
  }

  async listRuns(userId: string, threadId: string, limit: number): Promise<RunRecord[]> {
    await this.getThread(userId, threadId);
    return this.storage.runs.listByThread(userId, threadId, { limit });
  }

  private newRunContext(thread: ThreadRecord, trigger: RunContext['trigger'], correlationId?: string): RunContext {
    return {
      runId: randomUUID(),
      threadId: thread.id,
      userId: thread.userId,
      agentId: thread.agentId,
      trigger,
      meta: {},
      requestedAt: this.clock.now().toISOString(),
      correlationId: correlationId ?? randomUUID(),
    };
  }
}
