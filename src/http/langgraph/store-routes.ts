import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { VigilError } from '../../domain/errors.js';
import type { MemoryHit, MemoryRecord } from '../../app/ports.js';
import { memoryContentSchema } from '../schemas.js';
import { anyObject, errorBody, uuid } from './protocol-schemas.js';
import { findAssistant, resolveAssistant, type ProtocolContext } from './protocol-threads.js';

/**
 * The LangGraph store ↔ vigil's long-term memory. vigil keeps memories per (user, agent)
 * as text, so the store's namespace is `["memories", <assistant_id>]`, a key is a memory
 * id (a UUID), and a value is `{ "content": "<text>" }`. Anything else is refused (422).
 * As everywhere in the protocol, `agent` and `chat` name the default agent (answers name it `default`).
 */
const NAMESPACE_ROOT = 'memories';
const label = z.string().min(1).max(128);
const key = uuid('vigil memory keys are UUIDs');
const putBody = z
  .object({ namespace: z.array(label).min(1).max(8), key, value: z.record(z.string(), z.unknown()), index: z.unknown().optional(), ttl: z.unknown().optional() })
  .strict();
const itemQuery = z.object({ namespace: z.string().min(1).max(1000), key, refresh_ttl: z.string().optional() }).strict();
const deleteBody = z.object({ namespace: z.array(label).min(1).max(8), key }).strict();
const searchBody = z
  .object({
    namespace_prefix: z.array(label).max(8).optional(),
    filter: z.record(z.string(), z.unknown()).optional(),
    limit: z.coerce.number().int().min(1).max(100).default(10),
    offset: z.coerce.number().int().min(0).max(10_000).default(0),
    query: z.string().max(1000).optional(),
    refresh_ttl: z.boolean().optional(),
  })
  .strict();
const namespacesBody = z
  .object({
    prefix: z.array(label).max(8).optional(),
    suffix: z.array(label).max(8).optional(),
    max_depth: z.number().int().min(1).max(8).optional(),
    limit: z.coerce.number().int().min(1).max(1000).default(100),
    offset: z.coerce.number().int().min(0).default(0),
  })
  .strict();

function agentOf(namespace: readonly string[]): string {
  if (namespace.length !== 2 || namespace[0] !== NAMESPACE_ROOT) throw new VigilError('UNSUPPORTED_OPTION', `vigil's store namespaces are ["${NAMESPACE_ROOT}", <assistant_id>]: memories belong to one agent of one user`);
  return namespace[1]!;
}

function toItem(memory: MemoryRecord | MemoryHit): Record<string, unknown> {
  return {
    namespace: [NAMESPACE_ROOT, memory.agentId],
    key: memory.id,
    value: { content: memory.content },
    created_at: memory.createdAt,
    updated_at: memory.updatedAt,
    ...('score' in memory ? { score: memory.score } : {}),
  };
}

export function storeRoutes(context: ProtocolContext): FastifyPluginAsyncZod {
  const { deps } = context;
  // By its key (its id), within the namespace's agent, however many newer memories it has.
  /** The agent a read names: an alias of the default agent is that agent; an id no agent has stays as it is (AGENT_NOT_FOUND, as for any id). */
  const readAgentOf = async (userId: string, assistantId: string) => (await findAssistant(context, userId, assistantId))?.id ?? assistantId;
  const find = async (userId: string, assistantId: string, key: string) => deps.memories.get(userId, await readAgentOf(userId, assistantId), key);
  /** The agent a write goes to: the default one is made on first use, as a run on it would. */
  const writeAgentOf = async (userId: string, assistantId: string) => (await resolveAssistant(context, userId, assistantId)).id;
  return async (app) => {
    app.put('/store/items', { schema: { tags: ['langgraph'], body: putBody, response: { 204: z.null(), 404: errorBody, 409: errorBody, 422: errorBody } } }, async (request, reply) => {
      const { userId, body } = request;
      const agentId = agentOf(body.namespace);
      const { content, ...rest } = body.value;
      if (typeof content !== 'string' || content.trim().length === 0 || Object.keys(rest).length > 0) throw new VigilError('UNSUPPORTED_OPTION', 'a vigil memory\'s value is { "content": "<text>" }');
      if (body.ttl !== undefined && body.ttl !== null) throw new VigilError('UNSUPPORTED_OPTION', 'memory ttl is not supported');
      if (body.index === false) throw new VigilError('UNSUPPORTED_OPTION', 'vigil always indexes a memory\'s content for search');
      const text = memoryContentSchema.safeParse(content);
      if (!text.success) throw new VigilError('VALIDATION_FAILED', `value.content: ${text.error.issues.map((issue) => issue.message).join('; ')}`);
      // Added, or the memory with this key replaced, in one write: a reader meanwhile finds the
      // old text or the new, and a key another agent's or user's memory holds is 409 MEMORY_EXISTS (unseen, I12).
      await deps.memories.put(userId, await writeAgentOf(userId, agentId), text.data, body.key);
      return reply.status(204).send(null);
    });

    app.get('/store/items', { schema: { tags: ['langgraph'], querystring: itemQuery, response: { 200: anyObject, 404: errorBody, 422: errorBody } } }, async (request) => {
      const { userId, query } = request;
      const agentId = agentOf(query.namespace.split('.'));
      const memory = await find(userId, agentId, query.key);
      if (!memory) throw new VigilError('MEMORY_NOT_FOUND', `no memory "${query.key}"`);
      return toItem(memory);
    });

    app.delete('/store/items', { schema: { tags: ['langgraph'], body: deleteBody, response: { 204: z.null(), 404: errorBody, 422: errorBody } } }, async (request, reply) => {
      const { userId, body } = request;
      const agentId = agentOf(body.namespace);
      if (!(await find(userId, agentId, body.key))) throw new VigilError('MEMORY_NOT_FOUND', `no memory "${body.key}"`);
      await deps.memories.delete(userId, body.key);
      return reply.status(204).send(null);
    });

    app.post('/store/items/search', { schema: { tags: ['langgraph'], body: searchBody, response: { 200: z.object({ items: z.array(anyObject) }), 404: errorBody, 422: errorBody } } }, async (request) => {
      const { userId, body } = request;
      if (body.filter !== undefined && Object.keys(body.filter).length > 0) throw new VigilError('UNSUPPORTED_OPTION', 'filtering memories by value fields is not supported (a memory is text); use query');
      const prefix = body.namespace_prefix ?? [];
      if (prefix.length > 2 || (prefix.length > 0 && prefix[0] !== NAMESPACE_ROOT)) return { items: [] };
      const agentIds = prefix.length === 2 ? [await readAgentOf(userId, prefix[1]!)] : (await deps.agents.list(userId)).map((agent) => agent.id);
      const items: Array<Record<string, unknown>> = [];
      const window = body.offset + body.limit;
      for (const agentId of agentIds) {
        const found = body.query ? await deps.memories.search(userId, agentId, body.query, window) : await deps.memories.list(userId, agentId, window);
        items.push(...found.map(toItem));
      }
      if (body.query) items.sort((a, b) => Number(b.score) - Number(a.score));
      return { items: items.slice(body.offset, window) };
    });

    app.post('/store/namespaces', { schema: { tags: ['langgraph'], body: namespacesBody, response: { 200: z.object({ namespaces: z.array(z.array(z.string())) }) } } }, async (request) => {
      const { userId, body } = request;
      const matches = (namespace: string[]) =>
        (!body.prefix || body.prefix.every((part, index) => namespace[index] === part)) && (!body.suffix || body.suffix.every((part, index) => namespace[namespace.length - body.suffix!.length + index] === part));
      const all = (await deps.agents.list(userId)).map((agent) => [NAMESPACE_ROOT, agent.id]);
      const namespaces = all.filter(matches).map((namespace) => (body.max_depth ? namespace.slice(0, body.max_depth) : namespace));
      const unique = [...new Map(namespaces.map((namespace) => [namespace.join('.'), namespace])).values()];
      return { namespaces: unique.slice(body.offset, body.offset + body.limit) };
    });
  };
}
