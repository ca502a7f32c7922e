import { HumanMessage, SystemMessage, type BaseMessage } from '@langchain/core/messages';
import { buildEnvelope, type Envelope } from '../domain/envelope/build-envelope.js';
import { envelopeMessageFields, hasEnvelopeMarker, placeEnvelope, withSystemPromptRule } from '../domain/envelope/envelope-marker.js';
import { memoryDataBlock, type RecalledMemoryData } from '../domain/recalled-memories.js';
import { isSynthetic } from '../domain/message-metadata.js';
import { ENVELOPE_VISIBILITY } from '../domain/envelope/envelope-visibility.js';
import type { ActiveRunSettings } from './run-settings.js';

/**
 * The one place where the list of messages a model is called with is built (I4, seed
 * 004): the system prompt with the run context rule, the thread's messages, and — when
 * the trigger's policy shows it — the run's envelope, right before the task message.
 *
 * Decisions:
 * - The envelope is built at model-call time from the run's meta and nonce and is NOT
 *   saved in thread state. It describes one run only, so a saved one would be stale on
 *   the next run (and cost checkpoint bytes on every turn of long autonomous threads);
 *   the run record keeps the same redacted meta, so what the model saw can be rebuilt.
 *   Any marked message that does reach state anyway (an older build, another graph) is
 *   dropped from the model's view here, so only this run's envelope is ever shown.
 * - The rule naming this run's nonce is appended to the system prompt of every run,
 *   envelope or not: an imitation in a run without an envelope must be as powerless as
 *   in a run with one.
 */

export { ENVELOPE_VISIBILITY } from '../domain/envelope/envelope-visibility.js';

export interface ModelInput {
  messages: BaseMessage[];
  /** The envelope shown to the model this call, if any (for logs: its stage and size). */
  envelope: Envelope | undefined;
}

export interface ModelInputOptions {
  /** The system prompt before the rule; the agent's by default. */
  systemPrompt?: string;
  /**
   * Recalled memories: shown after the rules as a delimited data block, never inside the
   * prompt text (see domain/recalled-memories.ts).
   */
  recalled?: { memories: readonly RecalledMemoryData[]; foundBy: string | null };
}

/** The messages of one model call, and the envelope among them. */
export function buildModelInput(stateMessages: readonly BaseMessage[], run: ActiveRunSettings, options: ModelInputOptions = {}): ModelInput {
  // One system message (some providers take no other): the prompt, the rules, then data.
  const data = options.recalled ? memoryDataBlock(options.recalled.memories, options.recalled.foundBy) : '';
  const rules = withSystemPromptRule(options.systemPrompt ?? run.systemPrompt, run.nonce);
  const system = new SystemMessage(data ? `${rules}\n\n${data}` : rules);
  // Stale envelopes (any run's marker) never reach the model as current context.
  const kept = withoutAbandonedPrompts(stateMessages.filter((message) => !hasEnvelopeMarker(message)));
  const hasTask = kept.some((message) => message.type === 'human');
  if (!ENVELOPE_VISIBILITY[run.trigger] || run.meta === undefined || !hasTask) return { messages: [system, ...kept], envelope: undefined };

  const envelope = buildEnvelope(run.meta, { nonce: run.nonce });
  // A stable id per run: the same envelope on every model call of the run.
  const message = new HumanMessage({ id: `envelope-${run.runId}`, ...envelopeMessageFields(envelope, run.nonce) });
  return { messages: [system, ...placeEnvelope<BaseMessage>(kept, message)], envelope };
}

/**
 * A synthetic prompt that was never answered — a follow-up or heartbeat a person's
 * message pre-empted (I8), or one a crash or a failed model cut short — is left out of
 * the model's input, so the model never sees two user-role turns where the system spoke
 * first and then the person. Recognised as: a synthetic human message followed by another
 * human message with no reply in between.
 *
 * Why not remove it from state (RemoveMessage): what the system said stays on record in
 * state as in history (I14), so the inspector and exports show it where it happened. The
 * prompt stays recorded, internal (I2, never shown to people), and out of model input.
 */
export function withoutAbandonedPrompts(messages: readonly BaseMessage[]): BaseMessage[] {
  return messages.filter((message, index) => {
    if (message.getType() !== 'human' || !isSynthetic(message.additional_kwargs)) return true;
    const next = messages.slice(index + 1).find((later) => later.getType() === 'human' || later.getType() === 'ai');
    return next === undefined || next.getType() === 'ai';
  });
}

/** The messages of one model call: what every graph's model-calling node should use. */
export function modelMessagesFor(stateMessages: readonly BaseMessage[], run: ActiveRunSettings, options: ModelInputOptions = {}): BaseMessage[] {
  return buildModelInput(stateMessages, run, options).messages;
}
