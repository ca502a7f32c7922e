import { HumanMessage } from '@langchain/core/messages';

/**
 * The agent takes a person's text or a ready HumanMessage (seed 002): a synthetic
 * message arrives whole, so its `additional_kwargs` metadata flows into graph state
 * untouched; plain text becomes a HumanMessage without metadata — a real message.
 */
export type TaskInput = string | HumanMessage;

export function toTaskMessage(input: TaskInput): HumanMessage {
  return typeof input === 'string' ? new HumanMessage({ content: input }) : input;
}
