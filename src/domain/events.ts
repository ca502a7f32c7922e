import { z } from 'zod';
import { runTriggerSchema } from './run-context.js';

/**
 * Everything the server tells a client about a thread, as one discriminated union named
 * noun.verb. The last event of a run's lifecycle is always `run.end`, whatever happened.
 */
const base = { threadId: z.string(), runId: z.string(), at: z.string() };

export const runStartEventSchema = z.object({ type: z.literal('run.start'), ...base, trigger: runTriggerSchema, model: z.string() });
export const messageDeltaEventSchema = z.object({ type: z.literal('message.delta'), ...base, messageId: z.string(), delta: z.string() });
export const messageEndEventSchema = z.object({
  type: z.literal('message.end'),
  ...base,
  message: z.object({
    id: z.string(),
    role: z.enum(['user', 'assistant']),
    content: z.unknown(),
    createdAt: z.string(),
    metadata: z.record(z.string(), z.unknown()),
  }),
});
export const runEndEventSchema = z.object({
  type: z.literal('run.end'),
  ...base,
  status: z.enum(['succeeded', 'failed', 'cancelled']),
  reason: z.string().optional(),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
});
export const errorEventSchema = z.object({
  type: z.literal('error'),
  threadId: z.string().optional(),
  runId: z.string().optional(),
  at: z.string(),
  code: z.string(),
  message: z.string(),
});

export const vigilEventSchema = z.discriminatedUnion('type', [
  runStartEventSchema,
  messageDeltaEventSchema,
  messageEndEventSchema,
  runEndEventSchema,
  errorEventSchema,
]);
export type VigilEvent = z.infer<typeof vigilEventSchema>;
export type VigilEventType = VigilEvent['type'];
export type EventOf<T extends VigilEventType> = Extract<VigilEvent, { type: T }>;
