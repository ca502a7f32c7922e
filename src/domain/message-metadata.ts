import { z } from 'zod';
import { textOf } from './message-content.js';
import { RUN_TRIGGERS } from './run-context.js';

/** Why an autonomous follow-up happens (seed 001). */
export const AUTONOMOUS_TRIGGER_TYPES = ['check_in', 'question_unanswered', 'task_incomplete', 'waiting_for_decision'] as const;
export type AutonomousTriggerType = (typeof AUTONOMOUS_TRIGGER_TYPES)[number];
export const autonomousTriggerTypeSchema = z.enum(AUTONOMOUS_TRIGGER_TYPES);

/**
 * Natural prompts: the model gets contextual guidance without meta-commentary that could
 * leak into its reply (seed 000).
 */
export const TRIGGER_PROMPTS: Readonly<Record<AutonomousTriggerType, string>> = Object.freeze({
  check_in: 'Continue our conversation naturally.',
  question_unanswered: "The user asked a question but hasn't responded. Follow up on it.",
  task_incomplete: 'Check in about the incomplete task we discussed.',
  waiting_for_decision: 'Follow up on the decision the user needs to make.',
});

/**
 * What the system writes into `additional_kwargs` of a message it wrote in a person's
 * role. Other LangChain keys may sit beside these and must survive untouched.
 */
export const messageMetadataSchema = z
  .object({
    synthetic: z.boolean().optional(),
    trigger_type: z.string().optional(),
    trigger_reason: z.string().optional(),
  })
  .passthrough();
export type MessageMetadata = z.infer<typeof messageMetadataSchema>;

export function isAutonomousTriggerType(value: unknown): value is AutonomousTriggerType {
  return typeof value === 'string' && (AUTONOMOUS_TRIGGER_TYPES as readonly string[]).includes(value);
}

/** Legacy synthetic messages (before metadata) began with this text. */
export const LEGACY_SYNTHETIC_PREFIX = '[AUTONOMOUS_FOLLOWUP:';

/** The minimal shape of a message we classify: a LangChain message or its stored form. */
export interface ClassifiableMessage {
  type: string; // 'human' | 'ai' | 'system' | 'tool' | …
  content: unknown;
  additional_kwargs?: Record<string, unknown> | undefined;
}

export type Visibility = 'user' | 'internal';

export type VisibilityReason =
  | 'real' // a person's message or the agent's reply
  | 'synthetic' // additional_kwargs.synthetic === true
  | 'legacy_content' // pre-metadata "[AUTONOMOUS_FOLLOWUP:" human message
  | 'non_conversational'; // system, tool or other non human/ai message

export interface Classification {
  visibility: Visibility;
  reason: VisibilityReason;
  /** Set when a synthetic message names a trigger type we do not know. */
  unknownTriggerType?: string;
}

/**
 * I1: strict metadata check. `synthetic === true` and nothing else is synthetic; a
 * missing, false, "true" or 1 value is a real message.
 */
export function isSynthetic(additionalKwargs: Record<string, unknown> | undefined | null): boolean {
  return additionalKwargs?.synthetic === true;
}

/**
 * Decide who a message is for. Metadata alone decides (I1); the only content check is the
 * legacy `[AUTONOMOUS_FOLLOWUP:` fallback for human messages without metadata, which the
 * caller counts in logs so that it can be retired.
 */
export function classifyMessage(message: ClassifiableMessage): Classification {
  if (message.type !== 'human' && message.type !== 'ai') return { visibility: 'internal', reason: 'non_conversational' };
  const kwargs = message.additional_kwargs;
  if (isSynthetic(kwargs)) {
    const triggerType = kwargs?.trigger_type;
    const result: Classification = { visibility: 'internal', reason: 'synthetic' };
    if (message.type === 'human' && triggerType !== undefined && !isAutonomousTriggerType(triggerType) && !isKnownRunTrigger(triggerType)) {
      result.unknownTriggerType = String(triggerType);
    }
    return result;
  }
  if (message.type === 'human' && (kwargs === undefined || !('synthetic' in kwargs))) {
    if (textOf(message.content).startsWith(LEGACY_SYNTHETIC_PREFIX)) return { visibility: 'internal', reason: 'legacy_content' };
  }
  return { visibility: 'user', reason: 'real' };
}

/** A real person's message: human, and not internal. Internal messages never count as user activity (I2). */
export function isRealUserMessage(message: ClassifiableMessage): boolean {
  return message.type === 'human' && classifyMessage(message).visibility === 'user';
}

// Run-level triggers (cron, webhook, …) may also tag synthetic messages; they are known too.
function isKnownRunTrigger(value: unknown): boolean {
  return typeof value === 'string' && (RUN_TRIGGERS as readonly string[]).includes(value);
}

/** Build the metadata of a synthetic follow-up message (seed 000, phase 1). */
export function syntheticMetadata(triggerType: AutonomousTriggerType, reason?: string): MessageMetadata {
  const metadata: MessageMetadata = { synthetic: true, trigger_type: triggerType };
  if (reason !== undefined) metadata.trigger_reason = reason;
  return metadata;
}
