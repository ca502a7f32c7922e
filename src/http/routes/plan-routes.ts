import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { PlanRecord, ToolCallRecord } from '../../app/plans/plan-ports.js';
import { PLAN_TOOL_CALL_PAGE, type PlanService } from '../../app/plans/plan-service.js';
import { plannerSettingsInputSchema, plannerSettingsSchema } from '../../domain/planner/planner-settings.js';
import type { HttpDependencies } from '../http-dependencies.js';
import { agentParams, errorBody, idParam, messageDto, runDto, threadParams } from '../schemas.js';
import { answerRun, wantsEventStream } from '../sse.js';

const planParams = z.object({ planId: idParam }).strict();
const listPlansQuery = z.object({ limit: z.coerce.number().int().min(1).max(100).default(20) }).strict();
const planDetailQuery = z
  .object({
    toolCallsLimit: z.coerce.number().int().min(1).max(PLAN_TOOL_CALL_PAGE).default(PLAN_TOOL_CALL_PAGE).describe(`how many tool calls at most (${PLAN_TOOL_CALL_PAGE} unless asked for fewer)`),
    toolCallsCursor: z.string().max(512).optional().describe("an answer's toolCallsNextCursor: the tool calls before that page's"),
  })
  .strict();

const stepDto = z.object({ description: z.string(), tools: z.array(z.string()), expectedOutcome: z.string(), status: z.string(), result: z.string().nullable() });
const milestoneDto = z.object({
  id: z.string(),
  orderIndex: z.number().int(),
  title: z.string(),
  description: z.string(),
  successCriteria: z.string(),
  status: z.enum(['pending', 'active', 'completed']),
  revisionCount: z.number().int(),
  criticDecision: z.string().nullable(),
  criticReason: z.string().nullable(),
  currentStep: z.number().int(),
  steps: z.array(stepDto),
  completedAt: z.string().nullable(),
});
const heartbeatDto = z
  .object({ status: z.enum(['armed', 'ended']), wakes: z.number().int(), lastDecision: z.string().nullable(), lastReason: z.string().nullable(), nextCheckAt: z.string().nullable() })
  .nullable();
export const planDto = z.object({
  id: z.string(),
  threadId: z.string(),
  agentId: z.string(),
  status: z.enum(['planning', 'active', 'stopped', 'completed', 'superseded']),
  request: z.string(),
  goal: z.string().nullable(),
  priority: z.enum(['low', 'medium', 'high']),
  reason: z.string().nullable().describe('why it stopped (a bound, a cancel, an error), or the final review'),
  strategicRevisionCount: z.number().int(),
  milestones: z.array(milestoneDto),
  knowledge: z
    .object({
      queries: z.array(z.object({ question: z.string(), sources: z.array(z.string()), priority: z.number() })),
      results: z.array(z.object({ query: z.string(), answer: z.string(), sources: z.array(z.string()), confidence: z.number() })),
    })
    .nullable(),
  heartbeat: heartbeatDto,
  lastRunId: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
  endedAt: z.string().nullable(),
});
export const toolCallDto = z.object({
  id: z.string(),
  seq: z.number().int(),
  runId: z.string(),
  milestoneId: z.string().nullable(),
  stepIndex: z.number().int().nullable(),
  tool: z.string(),
  args: z.record(z.string(), z.unknown()),
  status: z.enum(['succeeded', 'failed', 'refused']),
  output: z.string().nullable(),
  error: z.string().nullable(),
  startedAt: z.string(),
  endedAt: z.string(),
});
export const toolDto = z.object({ name: z.string(), description: z.string(), source: z.enum(['built-in', 'mcp']), server: z.string().nullable(), parameters: z.record(z.string(), z.unknown()) });

function toPlanDto(plan: PlanRecord): z.infer<typeof planDto> {
  return {
    id: plan.id,
    threadId: plan.threadId,
    agentId: plan.agentId,
    status: plan.status,
    request: plan.request,
    goal: plan.goal,
    priority: plan.priority,
    reason: plan.reason,
    strategicRevisionCount: plan.strategicRevisionCount,
    milestones: plan.milestones.map((milestone) => ({
      id: milestone.id,
      orderIndex: milestone.orderIndex,
      title: milestone.title,
      description: milestone.description,
      successCriteria: milestone.successCriteria,
      status: milestone.status,
      revisionCount: milestone.revisionCount,
      criticDecision: milestone.criticDecision,
      criticReason: milestone.criticReason,
      currentStep: milestone.currentStep,
      steps: milestone.steps,
      completedAt: milestone.completedAt,
    })),
    knowledge: plan.knowledge,
    heartbeat: plan.heartbeat,
    lastRunId: plan.lastRunId,
    createdAt: plan.createdAt,
    updatedAt: plan.updatedAt,
    endedAt: plan.endedAt,
  };
}

function toToolCallDto(call: ToolCallRecord): z.infer<typeof toolCallDto> {
  const { planId: _planId, ...rest } = call;
  return rest;
}

/** Plans, their progress and tool calls, resuming one, and a planner agent's tools and settings. Owner-only (I12). */
export function planRoutes(plans: PlanService, deps: HttpDependencies): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      '/api/threads/:threadId/plans',
      { schema: { tags: ['plans'], params: threadParams, querystring: listPlansQuery, response: { 200: z.object({ plans: z.array(planDto) }), 404: errorBody } } },
      async (request) => ({ plans: (await plans.listByThread(request.userId, request.params.threadId, request.query.limit)).map(toPlanDto) }),
    );

    app.get(
      '/api/plans/:planId',
      {
        schema: {
          tags: ['plans'],
          description: `A plan with its milestones, steps, knowledge, heartbeat state and the tool calls it made: its latest ${PLAN_TOOL_CALL_PAGE} (or toolCallsLimit), oldest first; toolCallsNextCursor, given back as toolCallsCursor, pages back to older ones.`,
          params: planParams,
          querystring: planDetailQuery,
          response: {
            200: planDto.extend({
              toolCalls: z.array(toolCallDto),
              toolCallsNextCursor: z.string().nullable().describe('the cursor for the tool calls before these, or null when these reach back to the first'),
            }),
            400: errorBody,
            404: errorBody,
          },
        },
      },
      async (request) => {
        const detail = await plans.detail(request.userId, request.params.planId, { toolCallLimit: request.query.toolCallsLimit, toolCallCursor: request.query.toolCallsCursor });
        return { ...toPlanDto(detail.plan), toolCalls: detail.toolCalls.map(toToolCallDto), toolCallsNextCursor: detail.toolCallsNextCursor };
      },
    );

    app.post(
      '/api/plans/:planId/resume',
      {
        schema: {
          tags: ['plans'],
          description:
            'Start a run that continues the stored plan (completed milestones are not redone), with fresh per-run budgets. With Accept: text/event-stream the run streams as SSE; otherwise JSON when it ends.',
          params: planParams,
          body: z.object({}).strict().nullish().describe('no body, or {}'),
          response: { 200: z.object({ run: runDto, messages: z.array(messageDto) }), 404: errorBody, 409: errorBody },
        },
      },
      async (request, reply) => {
        const { userId } = request;
        const { planId } = request.params;
        const plan = await plans.get(userId, planId); // a plain 404 before any streaming starts
        const runId = randomUUID();
        const resume = () => plans.resume(userId, planId, { runId, correlationId: request.id });
        // A stream starts with 200: refuse a plan that cannot resume before it does.
        if (wantsEventStream(request)) await plans.assertResumable(userId, planId);
        return answerRun(deps, request, reply, { threadId: plan.threadId, runId }, resume);
      },
    );

    app.get(
      '/api/agents/:agentId/tools',
      {
        schema: {
          tags: ['plans'],
          description: "The tools a planner agent can call now: built-ins and its MCP servers' tools; servers that failed to load are listed with their error.",
          params: agentParams,
          response: { 200: z.object({ tools: z.array(toolDto), unavailable: z.array(z.object({ server: z.string(), error: z.string() })) }), 404: errorBody },
        },
      },
      async (request) => {
        const listed = await plans.tools(request.userId, request.params.agentId);
        return { tools: [...listed.tools], unavailable: [...listed.unavailable] };
      },
    );

    app.get(
      '/api/agents/:agentId/planner',
      { schema: { tags: ['plans'], description: "The agent's planner settings, defaults filled in.", params: agentParams, response: { 200: plannerSettingsSchema, 404: errorBody } } },
      async (request) => plans.settings(request.userId, request.params.agentId),
    );

    app.put(
      '/api/agents/:agentId/planner',
      {
        schema: {
          tags: ['plans'],
          description: "Replace the agent's planner settings (budgets, fetch allow-list, MCP servers, overlord); missing keys take their defaults.",
          params: agentParams,
          body: plannerSettingsInputSchema,
          response: { 200: plannerSettingsSchema, 400: errorBody, 404: errorBody },
        },
      },
      async (request) => plans.updateSettings(request.userId, request.params.agentId, request.body),
    );
  };
}
