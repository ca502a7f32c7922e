import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { HttpDependencies } from '../http-dependencies.js';
import { AUTONOMY_SETTINGS_KEY } from '../../domain/autonomy/autonomy-policy.js';
import { agentDto, agentParams, createAgentBody, updateAgentBody, createMemoryBody, errorBody, listMemoriesQuery, memoryDto, memoryParams, toAgentDto, toMemoryDto } from '../schemas.js';

export function agentRoutes(deps: HttpDependencies): FastifyPluginAsyncZod {
  return async (app) => {
    app.post('/api/agents', { schema: { tags: ['agents'], body: createAgentBody, response: { 201: agentDto, 400: errorBody, 409: errorBody } } }, async (request, reply) => {
      const { autonomy, tools, context, ...fields } = request.body;
      const settings = { ...(autonomy ? { autonomy } : {}), ...(tools ? { tools } : {}), ...(context ? { context } : {}) };
      const agent = await deps.agents.create(request.userId, { ...fields, settings });
      return reply.status(201).send(toAgentDto(agent));
    });

    app.get('/api/agents', { schema: { tags: ['agents'], response: { 200: z.object({ agents: z.array(agentDto) }) } } }, async (request) => ({
      agents: (await deps.agents.list(request.userId)).map(toAgentDto),
    }));

    app.get('/api/agents/:agentId', { schema: { tags: ['agents'], params: agentParams, response: { 200: agentDto, 404: errorBody } } }, async (request) =>
      toAgentDto(await deps.agents.get(request.userId, request.params.agentId)),
    );

    app.patch(
      '/api/agents/:agentId',
      {
        schema: {
          tags: ['agents'],
          description: 'Change name, system prompt, model, autonomy policy or tool settings; a refused field is named in error.details[].path.',
          params: agentParams,
          body: updateAgentBody,
          response: { 200: agentDto, 400: errorBody, 404: errorBody },
        },
      },
      async (request) => {
        const { autonomy, tools, ...changes } = request.body;
        const settings = [...(autonomy ? [{ key: AUTONOMY_SETTINGS_KEY, value: autonomy }] : []), ...(tools ? [{ key: 'tools', value: tools }] : [])];
        const agent = await deps.agents.update(request.userId, request.params.agentId, changes, settings);
        // A new policy re-plans the agent's pending follow-ups, as PUT …/autonomy does (I5).
        if (autonomy) await deps.autonomy?.replanPending(request.userId, request.params.agentId);
        return toAgentDto(agent);
      },
    );

    app.delete(
      '/api/agents/:agentId',
      { schema: { tags: ['agents'], description: 'Delete the agent, its threads, and the schedules, webhooks and follow-ups that would run for it.', params: agentParams } },
      async (request, reply) => {
        await deps.agents.delete(request.userId, request.params.agentId);
        return reply.status(204).send();
      },
    );

    app.post(
      '/api/agents/:agentId/memories',
      { schema: { tags: ['memories'], params: agentParams, body: createMemoryBody, response: { 201: memoryDto, 404: errorBody } } },
      async (request, reply) => reply.status(201).send(toMemoryDto(await deps.memories.add(request.userId, request.params.agentId, request.body.content))),
    );

    app.get(
      '/api/agents/:agentId/memories',
      {
        schema: {
          tags: ['memories'],
          description: 'Without q: the newest memories first; nextCursor, given back as cursor, pages on to older ones (null on the last page). With q: the best-ranked hits, with a score, in one page (nextCursor null).',
          params: agentParams,
          querystring: listMemoriesQuery,
          response: { 200: z.object({ memories: z.array(memoryDto), nextCursor: z.string().nullable() }), 400: errorBody, 404: errorBody },
        },
      },
      async (request) => {
        const { q, limit, cursor } = request.query;
        if (q) return { memories: (await deps.memories.search(request.userId, request.params.agentId, q, limit)).map(toMemoryDto), nextCursor: null };
        const page = await deps.memories.page(request.userId, request.params.agentId, { limit, cursor });
        return { memories: page.memories.map(toMemoryDto), nextCursor: page.nextCursor };
      },
    );

    app.delete('/api/memories/:memoryId', { schema: { tags: ['memories'], params: memoryParams } }, async (request, reply) => {
      await deps.memories.delete(request.userId, request.params.memoryId);
      return reply.status(204).send();
    });
  };
}
