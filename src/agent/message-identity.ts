import { randomUUID } from 'node:crypto';
import { RemoveMessage, coerceMessageLikeToMessage, type BaseMessage, type BaseMessageLike } from '@langchain/core/messages';
import { messagesStateReducer, type Messages } from '@langchain/langgraph';
import { appendMessages } from './message-index.js';

/**
 * I13: vigil owns message identity. The message id is the key LangGraph's
 * messagesStateReducer merges on — a message whose id is already in state REPLACES the
 * one there. A model provider's completion id is not unique enough to be that key (local
 * OpenAI-compatible servers answer every call with the same `chatcmpl-…`), so reply 2
 * would overwrite reply 1.
 *
 * The one place that decides: `vigilMessagesReducer`, the reducer of every graph's
 * `messages` channel. Whatever node adds model output or a tool result to state (chat
 * respond, planner nodes, summaries, tools), the message gets an id vigil generated when
 * it enters state, and the id it came with is kept as `response_metadata.provider_message_id`
 * (null when it had none). Human messages are identified where they enter a run
 * (`toTaskMessage`), which keeps a client's or channel's id as metadata in the same way.
 *
 * A message that already carries the `provider_message_id` key was adopted before (a
 * node deliberately updating a stored message): its vigil id is kept, so it replaces.
 * System messages keep their ids: only vigil writes them, sometimes under a stable id
 * on purpose (a summary that stands in for older messages is replaced, not repeated).
 */
export const PROVIDER_ID_KEY = 'provider_message_id';
/** Where a client- or channel-supplied id of a person's message is kept. */
export const CLIENT_ID_KEY = 'client_message_id';

/** A fresh message id of vigil's own. */
export function newMessageId(): string {
  return randomUUID();
}

const ADOPTED_TYPES: ReadonlySet<string> = new Set(['ai', 'tool']);

/** Give a model or tool message vigil's id, keeping the provider's as metadata. Mutates and returns it. */
export function adoptMessage(message: BaseMessage): BaseMessage {
  if (RemoveMessage.isInstance(message) || !ADOPTED_TYPES.has(message.getType())) return message;
  const metadata = (message.response_metadata ?? {}) as Record<string, unknown>;
  if (Object.hasOwn(metadata, PROVIDER_ID_KEY)) return message;
  const responseMetadata = { ...metadata, [PROVIDER_ID_KEY]: message.id ?? null };
  // Both the field and lc_kwargs: checkpoints serialise a message from its lc_kwargs keys.
  message.response_metadata = responseMetadata;
  (message.lc_kwargs as Record<string, unknown>).response_metadata = responseMetadata;
  message.id = newMessageId();
  (message.lc_kwargs as Record<string, unknown>).id = message.id;
  return message;
}

/** messagesStateReducer, with every model and tool message given vigil's id first (I13). */
export function vigilMessagesReducer(left: Messages, right: Messages): BaseMessage[] {
  const incoming = (Array.isArray(right) ? right : [right]) as BaseMessageLike[];
  const adopted = incoming.map((like) => adoptMessage(coerceMessageLikeToMessage(like)));
  // A turn's writes are almost always new messages at the end: appended without the plain reducer's pass over the whole list.
  return appendMessages(left, adopted) ?? messagesStateReducer(left, adopted);
}
