import type { Logger } from 'pino';
import { classifyMessage } from '../../domain/message-metadata.js';
import type { VigilEvent } from '../../domain/events.js';
import type { RunContext } from '../../domain/run-context.js';
import type { StoredMessage } from '../ports.js';

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
 * Announces the messages a run added to its thread's history (`message.end`), as the
 * checkpoint saver reports them once stored (HistorySink.onStored): the visible ones only
 * (I2: an internal message is never streamed to a person as if a person wrote it).
 */
export class MessageAnnouncer {
  /** Legacy content-classified messages seen by this process, so their retirement can be tracked. */
  private legacyFallbacks = 0;

  constructor(private readonly deps: { logger: Logger; emit: (event: VigilEvent) => void }) {}

  /**
   * `streamedAs`: the `message.delta` id under which the step that produced these messages
   * streamed its one reply, so a client can swap the streamed text for the stored message
   * (`message.end`'s `metadata.streamedAs`); given only when it is unambiguous.
   */
  announce(context: RunContext, runId: string, stored: readonly StoredMessage[], streamedAs?: string): void {
    const replies = stored.filter((message) => message.type === 'ai' && message.visibility === 'user');
    const linked = streamedAs !== undefined && replies.length === 1 ? replies[0] : undefined;
    for (const message of stored) {
      const classification = classifyMessage({ type: message.type, content: message.content, additional_kwargs: message.additionalKwargs });
      if (classification.unknownTriggerType !== undefined) {
        this.deps.logger.warn({ threadId: context.threadId, runId, messageId: message.id, triggerType: classification.unknownTriggerType }, 'Invalid trigger type on a synthetic message');
      }
      if (classification.reason === 'legacy_content') {
        this.legacyFallbacks += 1;
        this.deps.logger.warn({ threadId: context.threadId, runId, messageId: message.id, legacyFallbacks: this.legacyFallbacks }, 'Message classified internal by the legacy [AUTONOMOUS_FOLLOWUP: content fallback');
      }
      if (message.visibility !== 'user') {
        this.deps.logger.debug({ threadId: context.threadId, runId, messageId: message.id, triggerType: message.additionalKwargs.trigger_type }, 'internal message kept out of client streams');
        continue;
      }
      this.deps.emit({
        type: 'message.end',
        threadId: context.threadId,
        runId,
        at: message.createdAt,
        message: {
          id: message.id,
          role: message.type === 'human' ? 'user' : 'assistant',
          content: message.content,
          createdAt: message.createdAt,
          metadata: message === linked ? { ...publicMetadataOf(message), streamedAs } : publicMetadataOf(message),
        },
      });
    }
  }
}
