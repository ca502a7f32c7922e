import { z } from 'zod';
import { runTriggerSchema } from './run-context.js';

/**
 * Everything the server tells a client about a thread, as one discriminated union named
 * noun.verb. The last event of a run's lifecycle is always `run.end`, whatever happened.
 */
const base = { threadId: z.string(), runId: z.string(), at: z.string() };

export const runStartEventSchema = z.object({ type: z.literal('run.start'), ...base, trigger: runTriggerSchema, model: z.string() });
export const messageDeltaEventSchema = z.object({ type: z.literal('message.delta'), ...base, messageId: z.string(), delta: z.string() });
/**
 * Tokens already streamed as `message.delta` under `messageId` will not become a message:
 * the run was cancelled (e.g. a person pre-empted a follow-up, I8), failed, or is retrying.
 * A client removes what it showed for that id.
 */
export const messageRetractedEventSchema = z.object({ type: z.literal('message.retracted'), ...base, messageId: z.string(), reason: z.string() });
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
  status: z.enum(['succeeded', 'failed', 'cancelled', 'interrupted']),
  reason: z.string().optional(),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
});
/**
 * The thread was deleted: the last event of its stream. Subscriptions to it end here (a
 * thread of the same id made later, by anyone, is another thread and is not streamed).
 */
export const threadDeletedEventSchema = z.object({ type: z.literal('thread.deleted'), threadId: z.string(), at: z.string() });
/** A WebSocket subscription is in place: every later event of the thread reaches this client. */
export const threadSubscribedEventSchema = z.object({ type: z.literal('thread.subscribed'), threadId: z.string(), at: z.string() });
/**
 * A WebSocket `message.send` that carried a `requestId` was accepted: its run is `runId`
 * (starting, or waiting for the thread's current run) and the message lands in the thread
 * as `messageId` (its `message.end`). Sent to the sending connection only, before the run's
 * `run.start`. An `error` with the same requestId can still follow, if the run never starts
 * (the thread deleted while the message waited, the server stopping).
 */
export const messageAcceptedEventSchema = z.object({ type: z.literal('message.accepted'), ...base, requestId: z.string(), messageId: z.string() });
export const errorEventSchema = z.object({
  type: z.literal('error'),
  threadId: z.string().optional(),
  runId: z.string().optional(),
  /** The WebSocket frame's `requestId` when the error answers one (a refused or failed `message.send`). */
  requestId: z.string().optional(),
  at: z.string(),
  code: z.string(),
  message: z.string(),
});

// ---------- autonomy: follow-up timers ----------
const timerBase = { threadId: z.string(), timerId: z.string(), at: z.string() };
export const timerScheduleEventSchema = z.object({ type: z.literal('timer.schedule'), ...timerBase, dueAt: z.string(), triggerType: z.string(), reason: z.string().optional() });
export const timerFireEventSchema = z.object({ type: z.literal('timer.fire'), ...timerBase, dueAt: z.string().optional(), runId: z.string().optional(), triggerType: z.string() });
export const timerCancelEventSchema = z.object({ type: z.literal('timer.cancel'), ...timerBase, reason: z.string() });

// ---------- planner progress ----------
const planBase = { ...base, planId: z.string() };
export const planCreateEventSchema = z.object({
  type: z.literal('plan.create'),
  ...planBase,
  goal: z.string(),
  milestones: z.array(z.object({ id: z.string(), title: z.string() })),
});
export const stepStartEventSchema = z.object({ type: z.literal('step.start'), ...planBase, milestoneId: z.string(), stepIndex: z.number().int(), description: z.string() });
export const stepEndEventSchema = z.object({
  type: z.literal('step.end'),
  ...planBase,
  milestoneId: z.string(),
  stepIndex: z.number().int(),
  status: z.enum(['succeeded', 'failed']),
  summary: z.string().optional(),
});
export const criticDecideEventSchema = z.object({
  type: z.literal('critic.decide'),
  ...planBase,
  level: z.enum(['tactical', 'strategic']),
  decision: z.enum(['approve', 'revise', 'continue']),
  reason: z.string(),
});
export const planCompleteEventSchema = z.object({ type: z.literal('plan.complete'), ...planBase, status: z.enum(['completed', 'stopped']), reason: z.string().optional() });

// ---------- approvals: tool calls waiting for a person (I16) ----------
const approvalBase = { ...base, approvalId: z.string(), toolCallId: z.string(), tool: z.string() };
export const approvalRequestedEventSchema = z.object({
  type: z.literal('approval.requested'),
  ...approvalBase,
  /** Redacted. */
  arguments: z.record(z.string(), z.unknown()),
  expiresAt: z.string(),
  attended: z.boolean(),
});
export const approvalDecidedEventSchema = z.object({
  type: z.literal('approval.decided'),
  ...approvalBase,
  status: z.enum(['approved', 'edited', 'rejected', 'superseded']),
  channel: z.string(),
});
/** Nobody answered in time: recorded as expired, never as a refusal. */
export const approvalExpiredEventSchema = z.object({ type: z.literal('approval.expired'), ...approvalBase, expiresAt: z.string() });
/** The deadline is near and nobody has answered yet. */
export const approvalExpiringEventSchema = z.object({ type: z.literal('approval.expiring'), ...approvalBase, expiresAt: z.string() });

export const vigilEventSchema = z.discriminatedUnion('type', [
  runStartEventSchema,
  messageDeltaEventSchema,
  messageRetractedEventSchema,
  messageEndEventSchema,
  messageAcceptedEventSchema,
  runEndEventSchema,
  errorEventSchema,
  threadSubscribedEventSchema,
  threadDeletedEventSchema,
  timerScheduleEventSchema,
  timerFireEventSchema,
  timerCancelEventSchema,
  planCreateEventSchema,
  stepStartEventSchema,
  stepEndEventSchema,
  criticDecideEventSchema,
  planCompleteEventSchema,
  approvalRequestedEventSchema,
  approvalDecidedEventSchema,
  approvalExpiredEventSchema,
  approvalExpiringEventSchema,
]);
export type VigilEvent = z.infer<typeof vigilEventSchema>;
export type VigilEventType = VigilEvent['type'];
export type EventOf<T extends VigilEventType> = Extract<VigilEvent, { type: T }>;
