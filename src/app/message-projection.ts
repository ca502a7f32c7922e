import { AIMessage, type BaseMessage } from '@langchain/core/messages';
import { toolCallViews } from '../domain/tools/tool-call-view.js';
import { previewOf } from '../domain/message-content.js';
import { classifyMessage, isRealUserMessage, type Classification } from '../domain/message-metadata.js';
import type { NewStoredMessage } from './ports.js';

/**
 * A state message as history shows it. The thread store keeps each message once
 * (thread_messages, which checkpoints refer to); a row a person or the API may see carries
 * the visibility classified here, and history pages read those rows decoded into this shape
 * (thread-saver.ts), with a model message's tool calls as their redacted view.
 */
export function toStoredMessage(message: BaseMessage, runId: string | null, now: string): NewStoredMessage {
  return projectMessage(message, runId, now).row;
}

/** The projection row of a state message, and how it was classified (for logs). */
export function projectMessage(message: BaseMessage, runId: string | null, now: string): { row: NewStoredMessage; classification: Classification } {
  const type = message.getType();
  const classifiable = { type, content: message.content, additional_kwargs: message.additional_kwargs };
  const classification = classifyMessage(classifiable);
  if (!message.id) throw new Error('a message in graph state has no id'); // messagesStateReducer assigns one
  const row: NewStoredMessage = {
    id: message.id,
    type,
    content: message.content,
    additionalKwargs: projectedKwargs(message),
    responseMetadata: { ...(message.response_metadata ?? {}) },
    visibility: classification.visibility,
    runId,
    createdAt: now,
    preview: previewOf(message.content),
    isRealUserMessage: isRealUserMessage(classifiable),
  };
  return { row, classification };
}

/**
 * The kwargs a projected message keeps. A model message's tool calls are stored as their
 * redacted view (name, arguments with secrets redacted), never the provider's raw
 * arguments: the projection is what history shows.
 */
function projectedKwargs(message: BaseMessage): Record<string, unknown> {
  const kwargs: Record<string, unknown> = { ...message.additional_kwargs };
  if (AIMessage.isInstance(message) && (message.tool_calls?.length ?? 0) > 0) kwargs.tool_calls = toolCallViews(message.tool_calls ?? []);
  return kwargs;
}
