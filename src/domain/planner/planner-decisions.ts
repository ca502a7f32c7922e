import { z } from 'zod';

/**
 * Every planning and critic answer is one of these structured outputs, validated with zod
 * before anything acts on it. Bounds on array sizes keep a wild answer from becoming
 * unbounded work: at most 8 milestones, 8 steps per tactical plan, 5 tool calls a round.
 */

export const knowledgePlanDecision = z
  .object({
    queries: z
      .array(
        z.object({
          question: z.string().min(1).max(500).describe('a question whose answer the plan needs'),
          sources: z.array(z.string().max(100)).max(5).describe('where to look: "memory" and/or tool names'),
          priority: z.number().int().min(1).max(5).describe('5 = most important'),
          toolCall: z
            .object({ tool: z.string().min(1).max(100), args: z.record(z.string(), z.unknown()) })
            .nullable()
            .default(null)
            .describe('one tool call that helps answer it, or null'),
        }),
      )
      .max(5)
      .describe('empty when nothing needs looking up'),
  })
  .describe('What to find out before planning.');
export type KnowledgePlanDecision = z.infer<typeof knowledgePlanDecision>;

export const knowledgeAnswersDecision = z
  .object({
    results: z
      .array(
        z.object({
          query: z.string().max(500),
          answer: z.string().max(4000),
          sources: z.array(z.string().max(200)).max(10),
          confidence: z.number().min(0).max(1),
        }),
      )
      .max(5),
  })
  .describe('Answers to the knowledge questions, each with its sources and a confidence from 0 to 1.');
export type KnowledgeAnswersDecision = z.infer<typeof knowledgeAnswersDecision>;

export const strategicPlanDecision = z
  .object({
    goal: z.string().min(1).max(1000),
    priority: z.enum(['low', 'medium', 'high']).default('medium'),
    milestones: z
      .array(
        z.object({
          title: z.string().min(1).max(200),
          description: z.string().max(2000),
          successCriteria: z.string().min(1).max(1000),
        }),
      )
      .min(1)
      .max(8),
  })
  .describe('The goal and its ordered milestones, each with success criteria.');
export type StrategicPlanDecision = z.infer<typeof strategicPlanDecision>;

export const tacticalPlanDecision = z
  .object({
    steps: z
      .array(
        z.object({
          description: z.string().min(1).max(1000),
          tools: z.array(z.string().max(100)).max(5).describe('names of the tools this step may use'),
          expectedOutcome: z.string().max(1000),
        }),
      )
      .min(1)
      .max(8),
  })
  .describe('The steps that achieve the active milestone.');
export type TacticalPlanDecision = z.infer<typeof tacticalPlanDecision>;

export const executorDecision = z
  .object({
    calls: z.array(z.object({ tool: z.string().min(1).max(100), args: z.record(z.string(), z.unknown()) })).max(5),
    done: z.boolean().describe('true when this step is finished after these calls'),
    result: z.string().max(4000).describe('what this step achieved (or why it could not)'),
  })
  .describe('The tool calls for the current step, and whether the step is done.');
export type ExecutorDecision = z.infer<typeof executorDecision>;

export const tacticalCritique = z
  .object({
    decision: z.enum(['approve', 'revise', 'continue']).describe('approve: the milestone is achieved; revise: re-plan its steps; continue: go on with the planned steps'),
    reason: z.string().min(1).max(2000),
  })
  .describe('The tactical critic: judge the milestone against its success criteria.');
export type TacticalCritique = z.infer<typeof tacticalCritique>;

export const strategicCritique = z
  .object({
    decision: z.enum(['approve', 'revise']).describe('approve: the goal is met; revise: add milestones'),
    reason: z.string().min(1).max(2000),
  })
  .describe('The strategic critic: judge the whole plan against its goal.');
export type StrategicCritique = z.infer<typeof strategicCritique>;

export const overlordDecision = z
  .object({
    decision: z.enum(['plan', 'wait', 'end']).describe('plan: work on the plan now; wait: check again later; end: stop the heartbeats'),
    reason: z.string().min(1).max(1000),
    next_check_at: z.string().datetime({ offset: true }).nullable().default(null).describe('ISO 8601; for wait'),
  })
  .describe('The overlord: what to do about an idle thread with an unfinished plan.');
export type OverlordDecision = z.infer<typeof overlordDecision>;
