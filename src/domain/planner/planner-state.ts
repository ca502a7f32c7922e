import { z } from 'zod';
import { plannerBudgetsSchema } from './planner-settings.js';

/**
 * The planner's thread-state metadata, after seed 003's `ThreadStateMetadata`, as plain
 * data only (I10). Left out on purpose: the seed's `__emitAgentEvent` (a function) and
 * `wsChannel` (a socket's identity) — events go through the event bus the graph builder
 * closes over, never through state.
 */

export const milestoneStateSchema = z.object({
  id: z.string(),
  title: z.string(),
  description: z.string(),
  successCriteria: z.string(),
  orderIndex: z.number().int(),
});
export type MilestoneState = z.infer<typeof milestoneStateSchema>;

export const stepStatusSchema = z.enum(['pending', 'running', 'done', 'failed']);
export const tacticalStepStateSchema = z.object({
  description: z.string(),
  tools: z.array(z.string()),
  expectedOutcome: z.string(),
  status: stepStatusSchema,
  result: z.string().nullable(),
});
export type TacticalStepState = z.infer<typeof tacticalStepStateSchema>;

export const toolResultStateSchema = z.object({
  tool: z.string(),
  ok: z.boolean(),
  /** Truncated; the whole output is in the plan's tool-call records. */
  output: z.string(),
  stepIndex: z.number().int().nullable(),
});

export const knowledgeQuerySchema = z.object({ question: z.string(), sources: z.array(z.string()), priority: z.number() });
export const knowledgeResultSchema = z.object({ query: z.string(), answer: z.string(), sources: z.array(z.string()), confidence: z.number() });
export type KnowledgeResult = z.infer<typeof knowledgeResultSchema>;

export const heartbeatContextSchema = z.object({
  /** Milliseconds since the thread's last activity. */
  idleTime: z.number(),
  /** What that activity was: `user_input`, `agent_run` or `plan_update`. */
  lastActivity: z.string(),
  priority: z.enum(['low', 'medium', 'high']),
});
export type HeartbeatContext = z.infer<typeof heartbeatContextSchema>;

/** Which bound (I9) or other cause stopped a run early. */
export const stopBoundSchema = z.enum([
  'max_steps',
  'same_node_loop',
  'node_cycle',
  'token_budget',
  'tool_call_budget',
  'identical_tool_calls',
  'revision_cap',
  'malformed_output',
  'nothing_to_resume',
]);
export type StopBound = z.infer<typeof stopBoundSchema>;

export const plannerMetadataSchema = z.object({
  // ---- this run (reset by the first node of every run) ----
  runId: z.string().nullable().default(null),
  /** `new`: plan the person's request; `resume`: continue the stored plan; `reply`: no plan, just answer. */
  mode: z.enum(['new', 'resume', 'reply']).default('new'),
  /** This run's budgets, read from the agent's settings when the run starts. */
  budgets: plannerBudgetsSchema.prefault({}),
  /** Node executions this run (the total step budget). */
  stepCount: z.number().int().default(0),
  /** Bounded history of visited nodes, each with the progress it worked on (see loop-bounds.ts). */
  visited: z.array(z.string()).default([]),
  sameNodeLoopCount: z.number().int().default(0),
  maxIterationsReached: z.boolean().default(false),
  tokensUsed: z.number().int().default(0),
  toolCallCount: z.number().int().default(0),
  /** Tool-call signature → how often this run made it (the identical-call breaker). */
  toolCallSignatures: z.record(z.string(), z.number().int()).default({}),
  stop: z.object({ bound: stopBoundSchema, reason: z.string() }).nullable().default(null),

  // ---- memory and knowledge ----
  // id, created_at and found_by: provenance, shown to the model with the memory (data, not instructions).
  memories: z.array(z.object({ content: z.string(), relevance_score: z.number().optional(), id: z.string().optional(), created_at: z.string().optional(), found_by: z.string().optional() })).default([]),
  knowledgePlan: z.object({ queries: z.array(knowledgeQuerySchema) }).nullable().default(null),
  knowledgeResults: z.array(knowledgeResultSchema).default([]),

  // ---- strategic layer ----
  /** The person's request the active plan answers. */
  request: z.string().default(''),
  activePlanId: z.string().nullable().default(null),
  strategicPlan: z.object({ goal: z.string(), milestones: z.array(milestoneStateSchema) }).nullable().default(null),
  completedMilestoneIds: z.array(z.string()).default([]),
  activeMilestone: milestoneStateSchema.nullable().default(null),

  // ---- tactical layer ----
  tacticalPlan: z.object({ steps: z.array(tacticalStepStateSchema) }).nullable().default(null),
  executorContinue: z.boolean().default(false),
  /**
   * The executor's calls that wait for a person's approval (I16): the model's answer, kept
   * here by one executor visit so that the next visit, which waits with interrupt() and
   * resumes after the decisions, runs exactly these calls and never asks the model again.
   * `ask` marks the calls that need a decision; the others run beside them once all are decided.
   */
  pendingToolCalls: z
    .object({
      step: z.string(),
      planId: z.string(),
      milestoneId: z.string(),
      stepIndex: z.number().int(),
      calls: z.array(z.object({ id: z.string(), tool: z.string(), args: z.record(z.string(), z.unknown()), ask: z.boolean(), refusal: z.string().optional(), timeoutMs: z.number().int() })),
      done: z.boolean(),
      result: z.string(),
    })
    .nullable()
    .default(null),
  /** This milestone's tool results by call id (truncated). */
  toolResults: z.record(z.string(), toolResultStateSchema).default({}),
  currentStep: z.number().int().default(0),

  // ---- critics ----
  criticDecision: z.enum(['approve', 'revise', 'continue']).nullable().default(null),
  criticReason: z.string().nullable().default(null),
  finalCriticDecision: z.enum(['approve', 'revise']).nullable().default(null),
  finalCriticReason: z.string().nullable().default(null),
  revisionCount: z.number().int().default(0),
  maxRevisions: z.number().int().default(3),
  strategicRevisionCount: z.number().int().default(0),

  // ---- overlord ----
  overlordDecision: z.enum(['plan', 'wait', 'end']).nullable().default(null),
  heartbeatContext: heartbeatContextSchema.nullable().default(null),

  lastError: z.object({ node: z.string(), error: z.string(), timestamp: z.number(), retryCount: z.number().int() }).nullable().default(null),
});
export type PlannerMetadata = z.infer<typeof plannerMetadataSchema>;

export function emptyPlannerMetadata(): PlannerMetadata {
  return plannerMetadataSchema.parse({});
}
