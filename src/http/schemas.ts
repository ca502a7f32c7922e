import { z } from 'zod';
import { publicMetadataOf } from '../app/run-coordinator.js';
import { DEFAULT_AGENT_ALIASES } from '../app/agent-service.js';
import { autonomyPolicySchema } from '../domain/autonomy/autonomy-policy.js';
import { contextSettingsSchema } from '../domain/context/context-settings.js';
import { toolSettingsInputSchema } from '../domain/tools/tool-settings.js';
import { storedToolCallViews } from '../domain/tools/tool-call-view.js';
import type { AgentRecord, MemoryHit, MemoryOrigin, MemoryRecord, RunRecord, StoredMessage, ThreadRecord } from '../app/ports.js';
import type { ContextReport } from '../domain/context/context-report.js';
import { summaryCoverageSchema } from '../domain/context/conversation-summary.js';
import { recordedEnvelope } from '../domain/envelope/envelope-visibility.js';
import { MESSAGE_MAX_CHARACTERS } from './limits.js';

/**
 * Every request shape is a strict zod object: unknown fields are refused, so a client
 * can never smuggle message metadata (additional_kwargs, synthetic, …) into a thread.
 */
const textBlock = z.object({ type: z.literal('text'), text: z.string().min(1).max(MESSAGE_MAX_CHARACTERS) }).strict();
/** What a provider can fetch or read inline: an http(s) URL or a data: URL; never file:, javascript: or a relative path. */
const imageUrl = z
  .string()
  .min(1)
  .refine((value) => /^(https?:\/\/[^\s]+|data:[^\s]*)$/i.test(value), 'must be an http(s) URL or a data: URL');
const imageBlock = z
  .object({
    type: z.literal('image_url'),
    image_url: z.union([imageUrl, z.object({ url: imageUrl, detail: z.enum(['auto', 'low', 'high']).optional() }).strict()]),
  })
  .strict();
export const messageContentSchema = z.union([
  z.string().trim().min(1, 'must not be empty').max(MESSAGE_MAX_CHARACTERS),
  z.array(z.discriminatedUnion('type', [textBlock, imageBlock])).min(1).max(32),
]);

/** The longest id a route takes: vigil's own are UUIDs, a LangGraph client may name its threads. */
export const ID_MAX_LENGTH = 128;
/**
 * The longest path parameter any route takes: an id, or a LangGraph checkpoint id (200).
 * The router refuses a longer one before any schema sees it (Fastify's maxParamLength,
 * counted in decoded characters like the schemas' bounds), so it must not be below any of
 * them; the API document test holds every path parameter to it.
 */
export const PATH_PARAM_MAX_LENGTH = 200;
export const idParam = z.string().min(1).max(ID_MAX_LENGTH);
export const agentIdSchema = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'lowercase letters, digits, _ and -, at most 64');
/** The id of an agent being made (POST /api/agents, the protocol's POST /assistants): not an alias of the default agent. */
export const newAgentIdSchema = agentIdSchema.refine((id) => !DEFAULT_AGENT_ALIASES.has(id), {
  message: `${[...DEFAULT_AGENT_ALIASES].map((alias) => `"${alias}"`).join(' and ')} are reserved: in the LangGraph protocol they name your default agent`,
});
/** A model's name is a provider's identifier: 200 characters is several times the longest in use. */
export const MODEL_SPEC_MAX_LENGTH = 200;
export const modelSpec = z.string().max(MODEL_SPEC_MAX_LENGTH).regex(/^(demo|openai:.+|anthropic:.+)$/, 'must be "demo", "openai:<model>" or "anthropic:<model>"');
/** A list's `?limit`: a whole number from 1 to `max`, `fallback` when absent. */
export const listLimit = (fallback: number, max: number) => z.coerce.number().int().min(1).max(max).default(fallback);

export const createAgentBody = z
  .object({
    id: newAgentIdSchema,
    name: z.string().trim().min(1).max(200),
    kind: z.enum(['chat', 'planner']).default('chat'),
    systemPrompt: z.string().max(20_000).default('You are a helpful assistant. Answer clearly and briefly.'),
    model: modelSpec.nullable().default(null),
    /** The agent's autonomy policy (idle follow-ups); off when omitted. */
    autonomy: autonomyPolicySchema.optional(),
    /** Tool settings, the same shape on every agent kind: approval policy, fetch allow-list, MCP servers, bounds. */
    tools: toolSettingsInputSchema.optional(),
    /** The agent's context settings (budget, answer room, folding), as PUT /api/agents/{id}/context takes them; the server's when omitted. */
    context: contextSettingsSchema.optional(),
  })
  .strict();
export const updateAgentBody = z
  .object({
    name: z.string().trim().min(1).max(200).optional(),
    systemPrompt: z.string().max(20_000).optional(),
    model: modelSpec.nullable().optional(),
    /** Replaces the agent's autonomy policy, as PUT /api/agents/{id}/autonomy does. */
    autonomy: autonomyPolicySchema.optional(),
    /** Replaces the agent's tool settings (approval policy per tool, fetch, MCP servers, bounds). */
    tools: toolSettingsInputSchema.optional(),
  })
  .strict()
  .refine((value) => Object.keys(value).length > 0, 'nothing to change');
export const agentParams = z.object({ agentId: idParam }).strict();
export const createThreadBody = z.object({ agentId: idParam.optional(), title: z.string().trim().min(1).max(200).optional() }).strict();
export const updateThreadBody = z.object({ title: z.string().trim().min(1).max(200).nullable() }).strict();
export const threadParams = z.object({ threadId: idParam }).strict();
export const runParams = z.object({ runId: idParam }).strict();
export const memoryParams = z.object({ memoryId: idParam }).strict();
export const listThreadsQuery = z.object({ limit: listLimit(20, 100), cursor: z.string().max(512).optional() }).strict();
export const historyQuery = z
  .object({ limit: listLimit(50, 200), cursor: z.string().max(512).optional(), include: z.enum(['internal']).optional() })
  .strict();
export const listRunsQuery = z.object({ limit: listLimit(20, 100) }).strict();
export const sendMessageBody = z.object({ content: messageContentSchema }).strict();
/** A memory's text as a person (or their app) writes it: POST /api/agents/{id}/memories and the LangGraph store's value.content. */
export const memoryContentSchema = z.string().trim().min(1).max(10_000);
export const createMemoryBody = z.object({ content: memoryContentSchema }).strict();
export const listMemoriesQuery = z
  .object({
    q: z.string().trim().min(1).max(1000).optional(),
    limit: listLimit(20, 100),
    cursor: z.string().max(512).optional().describe("a list's nextCursor: the memories before that page's (not with q: a search answers its best hits in one page)"),
  })
  .strict()
  // A search is ranked, not paged: a cursor beside it would be silently ignored, so refuse it.
  .refine((query) => query.q === undefined || query.cursor === undefined, { message: 'cursor pages the list; a search (q) answers its best `limit` hits', path: ['cursor'] });

// ---------- responses ----------
export const errorBody = z.object({ error: z.object({ code: z.string(), message: z.string(), details: z.unknown().optional() }) });

export const agentDto = z.object({
  id: z.string(),
  name: z.string(),
  kind: z.enum(['chat', 'planner']),
  systemPrompt: z.string(),
  model: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export const threadDto = z.object({
  id: z.string(),
  agentId: z.string(),
  title: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
  lastUserActivityAt: z.string().nullable(),
  messageCount: z.number().int().describe('visible messages only (I2)'),
  preview: z.string().nullable().describe('the last visible message'),
  lastMessageAt: z.string().nullable(),
  /** `interrupted`: a tool call waits for the person's decision (GET /api/approvals). Present on a single thread's read. */
  status: z.enum(['idle', 'interrupted']).optional(),
});
export const messageDto = z.object({
  id: z.string(),
  role: z.enum(['user', 'assistant', 'system', 'tool']),
  content: z.unknown(),
  createdAt: z.string(),
  runId: z.string().nullable(),
  metadata: z.record(z.string(), z.unknown()),
  toolCalls: z
    .array(z.object({ id: z.string().nullable(), name: z.string(), arguments: z.unknown() }))
    .optional()
    .describe("the agent's tool calls in this reply (arguments redacted); their results are the tool messages (include=internal)"),
  visibility: z.enum(['user', 'internal']).optional().describe('present with include=internal'),
  additionalKwargs: z.record(z.string(), z.unknown()).optional().describe('present with include=internal'),
});
const modelInputDto = z
  .object({
    at: z.string(),
    model: z.string(),
    inputTokens: z.number().int().describe('everything the model received, counted (our tokenizer, corrected by the provider\'s reported usage)'),
    inputLimit: z.number().int().describe('the most the input could take: the budget less the room kept for the answer'),
    systemTokens: z.number().int(),
    envelopeTokens: z.number().int().nullable().describe('null when the call carried no envelope'),
    tools: z.object({ count: z.number().int(), tokens: z.number().int() }).optional().describe("the tools bound to the call, their definitions counted (absent in records from before they were)"),
    memories: z.object({ count: z.number().int(), tokens: z.number().int() }).optional().describe('the recalled memories the call carried, as fitted to their share (absent in records from before they were reported)'),
    summary: z.object({ tokens: z.number().int(), coveredMessages: z.number().int(), lastMessageId: z.string() }).nullable(),
    window: z.object({
      count: z.number().int(),
      tokens: z.number().int(),
      firstMessageId: z.string().nullable(),
      lastMessageId: z.string().nullable(),
      summarized: z.number().int(),
      trimmed: z.number().int(),
      cut: z.boolean(),
      mediaReplaced: z.number().int(),
    }).describe("the thread's messages the model read: a stretch of history from firstMessageId to lastMessageId"),
  })
  .describe('what one model call of the run received');

export const runDto = z.object({
  id: z.string(),
  threadId: z.string(),
  agentId: z.string(),
  trigger: z.string(),
  meta: z.record(z.string(), z.unknown()),
  correlationId: z.string(),
  status: z.string(),
  reason: z.string().nullable(),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
  model: z.string(),
  requestedAt: z.string(),
  startedAt: z.string(),
  endedAt: z.string().nullable(),
  envelope: z
    .object({
      shown: z.boolean().describe("whether the run's model calls carried an envelope (cron, webhook, channel, heartbeat, check-in)"),
      json: z.string().nullable().describe('the envelope message as the model read it, rebuilt from the redacted meta; the run nonce is not stored and shows as a stand-in'),
      bytes: z.number().int(),
      stage: z.string().nullable().describe('full, strings_cut, keys_dropped or stub'),
    })
    .describe('the envelope the model received (I4)'),
  modelInputs: z.array(modelInputDto).describe("what each of the run's model calls received, in order (recorded when the run ended)"),
});
export const memoryDto = z.object({
  id: z.string(),
  agentId: z.string(),
  content: z.string(),
  createdAt: z.string(),
  origin: z
    .object({ by: z.enum(['api', 'agent']), runId: z.string().nullable(), threadId: z.string().nullable() })
    .nullable()
    .describe("who wrote it: 'api' (the person or their app) or 'agent' (its memory_write tool, in the run and thread named; null for 'api', and the thread null once it was deleted); null for memories written before origins were kept"),
  score: z.number().optional(),
});

export function toAgentDto(agent: AgentRecord): z.infer<typeof agentDto> {
  return { id: agent.id, name: agent.name, kind: agent.kind, systemPrompt: agent.systemPrompt, model: agent.model, createdAt: agent.createdAt, updatedAt: agent.updatedAt };
}

export function toThreadDto(thread: ThreadRecord): z.infer<typeof threadDto> {
  return {
    id: thread.id,
    agentId: thread.agentId,
    title: thread.title,
    createdAt: thread.createdAt,
    updatedAt: thread.updatedAt,
    lastUserActivityAt: thread.lastUserActivityAt,
    messageCount: thread.visibleCount,
    preview: thread.lastVisiblePreview,
    lastMessageAt: thread.lastVisibleAt,
  };
}

const ROLES: Record<string, z.infer<typeof messageDto>['role']> = { human: 'user', ai: 'assistant', system: 'system', tool: 'tool' };

export function toMessageDto(message: StoredMessage, includeInternal: boolean): z.infer<typeof messageDto> {
  const dto: z.infer<typeof messageDto> = {
    id: message.id,
    role: ROLES[message.type] ?? 'system',
    content: message.content,
    createdAt: message.createdAt,
    runId: message.runId,
    metadata: publicMetadataOf(message),
  };
  const toolCalls = message.type === 'ai' ? storedToolCallViews(message.additionalKwargs.tool_calls) : [];
  if (toolCalls.length > 0) dto.toolCalls = toolCalls;
  if (includeInternal) {
    dto.visibility = message.visibility;
    dto.additionalKwargs = message.additionalKwargs;
  }
  return dto;
}

export function toRunDto(run: RunRecord): z.infer<typeof runDto> {
  return {
    id: run.id,
    threadId: run.threadId,
    agentId: run.agentId,
    trigger: run.trigger,
    meta: run.meta,
    correlationId: run.correlationId,
    status: run.status,
    reason: run.reason,
    error: run.errorCode && run.errorCode !== 'RUN_CANCELLED' ? { code: run.errorCode, message: run.errorMessage ?? '' } : null,
    model: run.model,
    requestedAt: run.requestedAt,
    startedAt: run.startedAt,
    endedAt: run.endedAt,
    envelope: recordedEnvelope(run.trigger, run.meta),
    modelInputs: run.modelInputs,
  };
}

export function toMemoryDto(memory: MemoryRecord | MemoryHit): z.infer<typeof memoryDto> {
  return { id: memory.id, agentId: memory.agentId, content: memory.content, createdAt: memory.createdAt, origin: originDto(memory.origin), ...('score' in memory ? { score: memory.score } : {}) };
}

function originDto(origin: MemoryOrigin | null): z.infer<typeof memoryDto>['origin'] {
  if (origin === null) return null;
  return origin.by === 'agent' ? { by: 'agent', runId: origin.runId, threadId: origin.threadId } : { by: 'api', runId: null, threadId: null };
}

/** GET /api/threads/{id}/context: what the next model call would receive (I14), with token counts per part. */
export const threadContextDto = z.object({
  budget: z.object({
    maxTokens: z.number().int(),
    source: z.enum(['agent', 'server', 'model_profile', 'default']).describe('context.maxTokens of the agent, VIGIL_CONTEXT_TOKENS, the model\'s window, or 32000'),
    answerTokens: z.number().int().describe('kept free for the answer'),
    inputLimit: z.number().int().describe('the most the input may take'),
    usageCorrection: z.number().describe('reported usage / our count for this model; 1 until the model reported any'),
  }),
  system: z.object({ text: z.string(), tokens: z.number().int() }),
  envelope: z.object({
    shown: z.boolean(),
    tokens: z.number().int(),
    note: z.string(),
  }),
  tools: z.object({ count: z.number().int(), tokens: z.number().int() }).describe('the tools the next call binds: their definitions (name, description, parameters schema) are input too'),
  memories: z
    .object({
      count: z.number().int().describe('the recalled memories the call carries, after fitting to their share of the input (the lowest-ranked left out)'),
      tokens: z.number().int().describe('their data block, part of system.tokens'),
      query: z
        .object({ source: z.enum(['current_message', 'last_real_user_message', 'conversation_summary', 'none']).describe('which text the memory search used (I2: never a synthetic message)') })
        .nullable()
        .describe('null when the call recalls no memories (a planner agent)'),
    })
    .describe('the memories the next call recalls: the same search, query and fitting as the call itself'),
  summary: z
    .object({
      text: z.string(),
      tokens: z.number().int(),
      coverage: summaryCoverageSchema.nullable(),
      writtenBy: z.literal('system').describe('an internal summary written by a model for the system, never a person\'s message (I2)'),
    })
    .nullable(),
  messages: z.object({
    inThread: z.number().int().describe('every message, all still in history'),
    summarized: z.number().int().describe('covered by the summary'),
    trimmed: z.number().int().describe('neither summarised nor sent (a summary still to come)'),
    tokens: z.number().int(),
    window: z.array(z.object({ id: z.string().nullable(), type: z.string(), tokens: z.number().int(), mediaReplaced: z.boolean(), cut: z.boolean() })),
  }),
  inputTokens: z.number().int(),
});

const ENVELOPE_NOTE = "built at call time for cron, webhook, channel and heartbeat runs; a person's next message is sent without one";

export function toThreadContextDto(report: ContextReport): z.infer<typeof threadContextDto> {
  return {
    budget: report.budget,
    system: report.system,
    envelope: { ...report.envelope, note: ENVELOPE_NOTE },
    tools: report.tools,
    memories: report.memories,
    summary: report.summary ? { ...report.summary, writtenBy: 'system' } : null,
    messages: report.messages,
    inputTokens: report.inputTokens,
  };
}
