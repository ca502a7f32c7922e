import type { BaseMessage } from '@langchain/core/messages';
import type { Logger } from 'pino';
import type { VigilEvent } from '../../domain/events.js';
import type { RunContext } from '../../domain/run-context.js';
import { projectMessage } from '../message-projection.js';
import type { Clock, Storage, StoredMessage } from '../ports.js';

/** What a person may see of a visible message's metadata: the model that wrote it. */
export function publicMetadataOf(message: Pick<StoredMessage, 'type' | 'responseMetadata' | 'runId'>): Record<string, unknown> {
  const metadata: Record<string, unknown> = {};
  if (message.runId) metadata.runId = message.runId;
  const model = message.responseMetadata.model_name ?? message.responseMetadata.model;
  if (message.type === 'ai' && typeof model === 'string') metadata.model = model;
  if (message.responseMetadata.demo === true) metadata.demo = true;
  return metadata;
}

/**
 * Keeps a thread's message projection in step with its checkpoint: appends the state
 * messages the projection lacks and announces the visible ones (`message.end`).
 */
export class MessageProjector {
  /** Legacy content-classified messages seen by this process, so their retirement can be tracked. */
  private legacyFallbacks = 0;

  constructor(private readonly deps: { storage: Storage; clock: Clock; logger: Logger; emit: (event: VigilEvent) => void }) {}

  /**
   * `streamedAs`: the `message.delta` id under which the step that produced these messages
   * streamed its one reply, so a client can swap the streamed text for the stored message
   * (`message.end`'s `metadata.streamedAs`); given only when it is unambiguous.
   */
  async project(context: RunContext, messages: readonly BaseMessage[], runId: string, streamedAs?: string): Promise<StoredMessage[]> {
    return (await this.projectTail(context, messages, runId, { streamedAs })).stored;
  }

  /**
   * project, for a caller that holds the thread's lock and already knows how many messages
   * the projection holds (`knownCount`, from this method's last answer): no read of the
   * thread first. Returns the count the projection holds after.
   */
  async projectTail(
    context: RunContext,
    messages: readonly BaseMessage[],
    runId: string,
    options: { streamedAs?: string | undefined; knownCount?: number | undefined },
  ): Promise<{ stored: StoredMessage[]; messageCount: number }> {
    const { streamedAs } = options;
    let count = options.knownCount;
    if (count === undefined) {
      const thread = await this.deps.storage.threads.get(context.userId, context.threadId);
      if (!thread) return { stored: [], messageCount: 0 };
      count = thread.messageCount;
    }
    if (messages.length <= count) return { stored: [], messageCount: count };
    const now = this.deps.clock.now().toISOString();
    const fresh = messages.slice(count).map((message) => projectMessage(message, runId, now));
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
    const last = stored.at(-1);
    const replies = stored.filter((message) => message.type === 'ai' && message.visibility === 'user');
    const linked = streamedAs !== undefined && replies.length === 1 ? replies[0] : undefined;
    for (const message of stored) {
      if (message.visibility !== 'user') {
        this.deps.logger.debug({ threadId: context.threadId, runId, messageId: message.id, triggerType: message.additionalKwargs.trigger_type }, 'internal message kept out of client streams');
        continue;
      }
      this.deps.emit({
        type: 'message.end',
        threadId: context.threadId,
        runId,
        at: now,
        message: {
          id: message.id,
          role: message.type === 'human' ? 'user' : 'assistant',
          content: message.content,
          createdAt: message.createdAt,
          metadata: message === linked ? { ...publicMetadataOf(message), streamedAs } : publicMetadataOf(message),
        },
      });
    }
    // Seqs count from 0: the last one stored says how many the projection holds now.
    return { stored, messageCount: last === undefined ? count : Math.max(count, last.seq + 1) };
  }
}
