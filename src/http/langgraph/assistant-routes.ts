import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { VigilError, isVigilError } from '../../domain/errors.js';
import type { AgentRecord } from '../../app/ports.js';
import { GRAPH_IDS, toAssistant } from './convert.js';
import { anyObject, assistantIdParams, createAssistantBody, deleteAssistantQuery, errorBody, graphQuery, searchAssistantsBody, updateAssistantBody } from './protocol-schemas.js';
import { MODEL_SPEC_MAX_LENGTH, modelSpec } from '../schemas.js';
import { containsMetadata, resolveAssistant, selectFields, type ProtocolContext } from './protocol-threads.js';

type Json = Record<string, unknown>;

/** `agent` (Agent Chat UI's default graph id) is vigil's chat graph. */
function kindOfGraph(graphId: string): 'chat' | 'planner' {
  if (graphId === 'agent' || graphId === 'chat') return 'chat';
  if (graphId === 'planner') return 'planner';
  throw new VigilError('VALIDATION_FAILED', `unknown graph_id "${graphId}": vigil serves ${GRAPH_IDS.join(', ')} (and "agent" for chat)`);
}

/** An assistant's config and context: vigil honours context.system_prompt and context.model; anything else is refused. */
function agentFieldsOf(body: { config?: Json | undefined; context?: Json | undefined }): { systemPrompt?: string; model?: string | null } {
  const configurable = (body.config?.configurable ?? {}) as Json;
  const otherConfig = Object.keys(body.config ?? {}).filter((key) => key !== 'configurable');
  if (otherConfig.length > 0 || Object.keys(configurable).length > 0) throw new VigilError('UNSUPPORTED_OPTION', 'an assistant\'s config is not supported by vigil; set context.system_prompt or context.model instead');
  const { system_prompt: systemPrompt, model, ...rest } = body.context ?? {};
  if (Object.keys(rest).length > 0) throw new VigilError('UNSUPPORTED_OPTION', `unsupported context keys: ${Object.keys(rest).join(', ')} (vigil knows system_prompt and model)`);
  if (systemPrompt !== undefined && typeof systemPrompt !== 'string') throw new VigilError('VALIDATION_FAILED', 'context.system_prompt must be a string');
  if (model !== undefined && model !== null && !modelSpec.safeParse(model).success) throw new VigilError('VALIDATION_FAILED', `context.model must be "demo", "openai:<model>" or "anthropic:<model>", at most ${MODEL_SPEC_MAX_LENGTH} characters`);
  return { ...(systemPrompt !== undefined ? { systemPrompt } : {}), ...(model !== undefined ? { model: model as string | null } : {}) };
}

const countAssistantsBody = z.object({ graph_id: z.string().max(64).optional(), name: z.string().max(200).optional(), metadata: z.record(z.string(), z.unknown()).optional() }).strict();
const versionsBody = z.object({ metadata: z.record(z.string(), z.unknown()).optional(), limit: z.coerce.number().int().min(1).max(1000).default(10), offset: z.coerce.number().int().min(0).default(0) }).strict();
const latestBody = z.object({ version: z.number().int() }).strict();

/** Assistants ↔ vigil agents. */
export function assistantRoutes(context: ProtocolContext): FastifyPluginAsyncZod {
  const { deps } = context;
  const hasThreads = async (userId: string, agentId: string) => {
    let cursor: string | undefined;
    do {
      const page = await deps.conversations.listThreads(userId, { limit: 100, cursor });
      if (page.threads.some((thread) => thread.agentId === agentId)) return true;
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    return false;
  };
  return async (app) => {
    app.post('/assistants', { schema: { tags: ['langgraph'], body: createAssistantBody, response: { 200: anyObject, 409: errorBody, 422: errorBody } } }, async (request) => {
      const { userId, body } = request;
      const kind = kindOfGraph(body.graph_id);
      const fields = agentFieldsOf(body);
      const id = body.assistant_id ?? randomUUID();
      if (body.assistant_id) {
        try {
          const existing = await deps.agents.get(userId, id);
          if (body.if_exists === 'do_nothing') return toAssistant(existing);
          throw new VigilError('AGENT_EXISTS', `an assistant "${id}" already exists`);
        } catch (error) {
          if (!(isVigilError(error) && error.code === 'AGENT_NOT_FOUND')) throw error;
        }
      }
      const agent = await deps.agents.create(userId, {
        id,
        name: body.name ?? body.graph_id,
        kind,
        systemPrompt: fields.systemPrompt ?? 'You are a helpful assistant. Answer clearly and briefly.',
        model: fields.model ?? null,
        settings: { langgraph: { description: body.description ?? null, metadata: body.metadata ?? {} } },
      });
      return toAssistant(agent);
    });

    app.get('/assistants/:assistant_id', { schema: { tags: ['langgraph'], params: assistantIdParams, response: { 200: anyObject, 404: errorBody } } }, async (request) =>
      toAssistant(await resolveAssistant(context, request.userId, request.params.assistant_id)),
    );

    app.patch('/assistants/:assistant_id', { schema: { tags: ['langgraph'], params: assistantIdParams, body: updateAssistantBody, response: { 200: anyObject, 404: errorBody, 422: errorBody } } }, async (request) => {
      const { userId, body } = request;
      const agent = await resolveAssistant(context, userId, request.params.assistant_id);
      if (body.graph_id !== undefined && kindOfGraph(body.graph_id) !== agent.kind) throw new VigilError('UNSUPPORTED_OPTION', "an assistant's graph cannot change (an agent's kind is fixed)");
      const fields = agentFieldsOf(body);
      const changes = { ...(body.name !== undefined ? { name: body.name } : {}), ...fields };
      const previous = (agent.settings.langgraph ?? {}) as Json;
      const langgraph = { ...previous, ...(body.description !== undefined ? { description: body.description } : {}), ...(body.metadata !== undefined ? { metadata: { ...((previous.metadata as Json) ?? {}), ...body.metadata } } : {}) };
      const updated = await deps.agents.update(userId, agent.id, changes, [{ key: 'langgraph', value: langgraph }]);
      return toAssistant(updated);
    });

    app.delete('/assistants/:assistant_id', { schema: { tags: ['langgraph'], params: assistantIdParams, querystring: deleteAssistantQuery, response: { 204: z.null(), 404: errorBody, 409: errorBody } } }, async (request, reply) => {
      const { userId, params, query } = request;
      const agent = await deps.agents.get(userId, params.assistant_id);
      // Deleting a vigil agent deletes its threads too (as DELETE /api/agents/{id} does): only when asked to.
      if (query.delete_threads !== 'true' && (await hasThreads(userId, agent.id))) {
        throw new VigilError('ASSISTANT_HAS_THREADS', `assistant "${agent.id}" has threads, and deleting it deletes them in vigil; pass delete_threads=true`);
      }
      await deps.agents.delete(userId, agent.id);
      return reply.status(204).send(null);
    });

    app.post('/assistants/count', { schema: { tags: ['langgraph'], body: countAssistantsBody, response: { 200: z.number().int() } } }, async (request) => {
      const { userId, body } = request;
      await deps.agents.getOrCreateDefault(userId);
      const kind = body.graph_id === 'agent' ? 'chat' : body.graph_id;
      return (await deps.agents.list(userId))
        .map(toAssistant)
        .filter((assistant) => (!kind || assistant.graph_id === kind) && (!body.name || String(assistant.name).toLowerCase().includes(body.name.toLowerCase())) && (!body.metadata || containsMetadata(assistant.metadata as Json, body.metadata))).length;
    });

    app.post('/assistants/:assistant_id/versions', { schema: { tags: ['langgraph'], params: assistantIdParams, body: versionsBody, response: { 200: z.array(anyObject), 404: errorBody } } }, async (request) => {
      // vigil keeps no versions of an agent: the current one is version 1, the only one.
      const assistant = toAssistant(await resolveAssistant(context, request.userId, request.params.assistant_id));
      const matches = !request.body.metadata || containsMetadata(assistant.metadata as Json, request.body.metadata);
      return matches && request.body.offset === 0 ? [assistant] : [];
    });

    app.post('/assistants/:assistant_id/latest', { schema: { tags: ['langgraph'], params: assistantIdParams, body: latestBody, response: { 200: anyObject, 404: errorBody, 422: errorBody } } }, async (request) => {
      const assistant = toAssistant(await resolveAssistant(context, request.userId, request.params.assistant_id));
      if (request.body.version !== 1) throw new VigilError('UNSUPPORTED_OPTION', 'vigil keeps no versions of an assistant: version 1 is the current one');
      return assistant;
    });

    app.post('/assistants/search', { schema: { tags: ['langgraph'], body: searchAssistantsBody, response: { 200: z.array(anyObject) } } }, async (request) => {
      const { userId, body } = request;
      await deps.agents.getOrCreateDefault(userId);
      let agents: AgentRecord[] = await deps.agents.list(userId);
      let assistants = agents.map(toAssistant);
      if (body.graph_id) {
        const kind = body.graph_id === 'agent' ? 'chat' : body.graph_id;
        assistants = assistants.filter((assistant) => assistant.graph_id === kind);
      }
      if (body.name) assistants = assistants.filter((assistant) => String(assistant.name).toLowerCase().includes(body.name!.toLowerCase()));
      if (body.metadata) assistants = assistants.filter((assistant) => containsMetadata(assistant.metadata as Json, body.metadata!));
      const key = body.sort_by ?? 'created_at';
      const order = body.sort_order === 'asc' ? 1 : -1;
      assistants.sort((a, b) => (String(a[key]) < String(b[key]) ? -order : String(a[key]) > String(b[key]) ? order : 0));
      agents = [];
      return selectFields(assistants.slice(body.offset, body.offset + body.limit), body.select);
    });

    app.get('/assistants/:assistant_id/graph', { schema: { tags: ['langgraph'], params: assistantIdParams, querystring: graphQuery, response: { 200: anyObject, 404: errorBody } } }, async (request) => {
      const agent = await resolveAssistant(context, request.userId, request.params.assistant_id);
      const describe = deps.langgraph?.describeGraph;
      if (!describe) throw new VigilError('UNSUPPORTED_OPTION', 'this server does not describe its graphs');
      return describe(agent.kind);
    });

    app.get('/assistants/:assistant_id/schemas', { schema: { tags: ['langgraph'], params: assistantIdParams, response: { 200: anyObject, 404: errorBody } } }, async (request) => {
      const agent = await resolveAssistant(context, request.userId, request.params.assistant_id);
      return {
        graph_id: agent.kind,
        input_schema: INPUT_SCHEMA,
        output_schema: STATE_SCHEMA,
        state_schema: STATE_SCHEMA,
        config_schema: { type: 'object', properties: {}, additionalProperties: false },
        context_schema: CONTEXT_SCHEMA,
      };
    });
  };
}

const MESSAGE_SCHEMA = {
  type: 'object',
  properties: { type: { type: 'string' }, id: { type: 'string' }, content: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'object' } }] } },
  required: ['content'],
};
/** What a run accepts: exactly one person's message (vigil writes every other message itself). */
const INPUT_SCHEMA = {
  type: 'object',
  properties: { messages: { type: 'array', minItems: 1, maxItems: 1, items: { ...MESSAGE_SCHEMA, properties: { ...MESSAGE_SCHEMA.properties, type: { enum: ['human', 'user'] } } } } },
  required: ['messages'],
  additionalProperties: false,
};
const STATE_SCHEMA = { type: 'object', properties: { messages: { type: 'array', items: MESSAGE_SCHEMA } }, required: ['messages'] };
const CONTEXT_SCHEMA = { type: 'object', properties: { system_prompt: { type: 'string' }, model: { type: ['string', 'null'] } }, additionalProperties: false };
