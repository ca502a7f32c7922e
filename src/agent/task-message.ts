import { HumanMessage } from '@langchain/core/messages';
import { CLIENT_ID_KEY, newMessageId } from './message-identity.js';

/**
 * The agent takes a person's text or a ready HumanMessage (seed 002): a synthetic
 * message arrives whole, so its `additional_kwargs` metadata flows into graph state
 * untouched; plain text becomes a HumanMessage without metadata — a real message.
 */
export type TaskInput = string | HumanMessage;

/**
 * The run's task message, always with an id (I13): a HumanMessage built by the server
 * keeps the id the server gave it (a crashed turn is found again by it); one without gets
 * a fresh vigil id. An id from a client or a channel never arrives here as the message id:
 * see `personMessage`.
 */
export function toTaskMessage(input: TaskInput): HumanMessage {
  const message = typeof input === 'string' ? new HumanMessage({ content: input }) : input;
  if (!message.id) {
    message.id = newMessageId();
    (message.lc_kwargs as Record<string, unknown>).id = message.id;
  }
  return message;
}

/**
 * A person's message as it enters a run: vigil's own id, and the id the client or channel
 * gave it (if any) kept as `additional_kwargs.client_message_id`, never as the key the
 * message reducer merges on (I13). No other metadata: a person cannot mark a message
 * synthetic (I1).
 */
export function personMessage(content: HumanMessage['content'], options: { clientMessageId?: string | undefined } = {}): HumanMessage {
  return new HumanMessage({
    id: newMessageId(),
    content,
    ...(options.clientMessageId !== undefined ? { additional_kwargs: { [CLIENT_ID_KEY]: options.clientMessageId } } : {}),
  });
}
