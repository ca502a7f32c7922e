import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { AgentRecord, EventBus, ThreadRecord } from '../../app/ports.js';
import type { ConversationService } from '../../app/conversation-service.js';
import type { ProtocolStore } from '../../app/langgraph/protocol-store.js';
import type { RunOutcome } from '../../app/run-coordinator.js';
import type { MessageContent } from '../../domain/message-content.js';
import { VigilError } from '../../domain/errors.js';
import type { VigilEvent } from '../../domain/events.js';
import { toVigilError } from '../errors.js';
import { toMessageDict } from './convert.js';
import { RunFrames } from './run-stream.js';

type Json = Record<string, unknown>;

export interface RunManagerDependencies {
  conversations: ConversationService;
  events: EventBus;
  store: ProtocolStore;
  logger: Logger;
  /** Visible messages of a thread (I2), for `values` frames. */
  visibleMessages: (userId: string, threadId: string) => Promise<import('../../app/ports.js').StoredMessage[]>;
  /** How long a finished run's frames stay for joins and reconnects. */
  retentionMs: number;
  /** Is a vigil run (of any trigger) in progress on the thread? */
  activeRunOf: (threadId: string) => string | undefined;
}

interface InFlight {
  runId: string;
  userId: string;
  threadId: string;
  frames: RunFrames;
  controller: AbortController;
  settled: Promise<RunOutcome | undefined>;
}

/** VigilEvent types passed to `custom` as vigil's extension (plan progress, approvals, timers, retractions). */
const CUSTOM_EVENTS: ReadonlySet<string> = new Set([
  'run.start',
  'message.retracted',
  'timer.schedule',
  'timer.fire',
  'timer.cancel',
  'plan.create',
  'step.start',
  'step.end',
  'critic.decide',
  'plan.complete',
  'approval.requested',
  'approval.decided',
  'approval.expired',
  'approval.expiring',
  'run.end',
]);

/**
 * Protocol runs: each is a person's message sent through the conversation service, so it
 * runs on the run coordinator like any other (one run per thread, I8; pre-emption of
 * autonomy; autonomy planned after it). This keeps the frames each run streamed, so
 * streams, joins and reconnects read one record.
 */
export class ProtocolRunManager {
  private readonly inFlight = new Map<string, InFlight>(); // runId →
  private readonly finished = new Map<string, RunFrames>(); // runId → frames, for a while

  constructor(private readonly deps: RunManagerDependencies) {}

  busyThreads(): Set<string> {
    return new Set([...this.inFlight.values()].map((run) => run.threadId));
  }

  /** Runs of this process in flight on the thread, oldest first. */
  inFlightOn(threadId: string): InFlight[] {
    return [...this.inFlight.values()].filter((run) => run.threadId === threadId);
  }

  activeRunOf(threadId: string): string | undefined {
    return this.deps.activeRunOf(threadId);
  }

  isBusy(threadId: string): boolean {
    return this.inFlightOn(threadId).length > 0 || this.deps.activeRunOf(threadId) !== undefined;
  }

  framesOf(runId: string): RunFrames | undefined {
    return this.inFlight.get(runId)?.frames ?? this.finished.get(runId);
  }

  /** Wait for a run of this process to settle (false when it is not in flight here). */
  async settle(runId: string): Promise<boolean> {
    const run = this.inFlight.get(runId);
    if (!run) return false;
    await run.settled;
    return true;
  }

  /** Cancel a run: abort it while it waits for the thread, or ask the coordinator to stop it. */
  async cancel(userId: string, runId: string): Promise<void> {
    const run = this.inFlight.get(runId);
    if (run && run.userId === userId) run.controller.abort(new VigilError('RUN_CANCELLED', 'the run was cancelled'));
    try {
      await this.deps.conversations.cancelRun(userId, runId);
    } catch (error) {
      // Not started yet: the abort above stops it before it starts.
      if (!(error instanceof VigilError && error.code === 'RUN_NOT_FOUND') && toVigilError(error).code !== 'RUN_NOT_FOUND') throw error;
    }
  }

  /**
   * Record the protocol run and start it in the background: a person's message on the
   * thread, waiting for the thread when another run holds it.
   */
  async start(input: { userId: string; thread: ThreadRecord; agent: AgentRecord; content: MessageContent; metadata: Json; multitaskStrategy: string; correlationId: string }): Promise<InFlight> {
    const runId = randomUUID();
    const { userId, thread } = input;
    await this.deps.store.createRun({ runId, userId, threadId: thread.id, assistantId: input.agent.id, metadata: input.metadata, multitaskStrategy: input.multitaskStrategy, state: 'pending', createdAt: new Date().toISOString() });
    const frames = new RunFrames();
    frames.push('metadata', { run_id: runId, thread_id: thread.id, attempt: 1 });
    const controller = new AbortController();
    let chain = Promise.resolve();
    const partial = new Map<string, string>();
    const translate = async (event: VigilEvent) => {
      const meta = { run_id: runId, thread_id: thread.id, assistant_id: input.agent.id, graph_id: input.agent.kind, langgraph_node: 'agent' };
      if (event.type === 'message.delta') {
        const text = (partial.get(event.messageId) ?? '') + event.delta;
        if (!partial.has(event.messageId)) frames.push('messages/metadata', { [event.messageId]: { metadata: meta } });
        partial.set(event.messageId, text);
        frames.push('messages', [{ type: 'AIMessageChunk', id: event.messageId, content: event.delta, additional_kwargs: {}, response_metadata: {}, tool_call_chunks: [] }, meta]);
        frames.push('messages/partial', [{ type: 'ai', id: event.messageId, content: text, additional_kwargs: {}, response_metadata: {} }]);
        return;
      }
      if (event.type === 'message.end') {
        const messages = await this.deps.visibleMessages(userId, thread.id);
        const stored = messages.find((message) => message.id === event.message.id);
        if (stored) {
          const dict = toMessageDict(stored);
          const streamed = typeof event.message.metadata.streamedAs === 'string';
          if (stored.type === 'ai') {
            // A reply that was not streamed token by token still reaches messages-tuple clients, once.
            if (!streamed) frames.push('messages', [{ ...dict, type: 'AIMessageChunk' }, meta]);
            frames.push('messages/complete', [dict]);
          }
          frames.push('updates', { [stored.type === 'human' ? '__input__' : 'agent']: { messages: [dict] } });
        }
        frames.push('values', { messages: messages.map(toMessageDict) });
        return;
      }
      if (CUSTOM_EVENTS.has(event.type)) frames.push('custom', { vigil: event });
      if (event.type === 'run.start') void this.deps.store.setRunState(runId, 'started');
      if (event.type === 'run.end' && event.status === 'failed') frames.push('error', { error: event.error?.code ?? 'RUN_FAILED', message: event.error?.message ?? event.reason ?? 'the run failed' });
    };
    let started = false;
    const unsubscribe = this.deps.events.subscribe(thread.id, (event) => {
      const ours = 'runId' in event && event.runId === runId;
      // Timer events carry no run id: those between this run's start and its end are its follow-up plans.
      const timer = started && !frames.done && event.type.startsWith('timer.') && !('runId' in event && event.runId !== undefined && event.runId !== runId);
      if (ours && event.type === 'run.start') started = true;
      if (!ours && !timer) return;
      chain = chain.then(() => translate(event)).catch((error: unknown) => this.deps.logger.error({ err: error, runId }, 'a protocol stream frame failed'));
    });
    const settled = this.deps.conversations
      .sendMessage(userId, thread.id, input.content, { runId, correlationId: input.correlationId, signal: controller.signal })
      .then(
        (outcome) => outcome,
        async (error: unknown) => {
          const vigilError = toVigilError(error);
          if (!started) await this.deps.store.setRunState(runId, vigilError.code === 'RUN_CANCELLED' ? 'cancelled' : 'failed');
          frames.push('error', { error: vigilError.code, message: vigilError.message });
          return undefined;
        },
      )
      .finally(async () => {
        unsubscribe();
        await chain;
        frames.close();
        this.inFlight.delete(runId);
        this.finished.set(runId, frames);
        setTimeout(() => this.finished.delete(runId), this.deps.retentionMs).unref();
      });
    const run: InFlight = { runId, userId, threadId: thread.id, frames, controller, settled };
    this.inFlight.set(runId, run);
    return run;
  }
}
