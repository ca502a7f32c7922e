import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { VigilError } from '../../domain/errors.js';
import type { ThreadRecord } from '../../app/ports.js';
import { countOfCheckpointId, threadMetadata, toMessageDict, toState, toThread, type ThreadStatus } from './convert.js';
import { anyObject, checkpointParams, createThreadBody, errorBody, getThreadQuery, historyBody, searchThreadsBody, stateQuery, threadIdParams, updateThreadBody } from './protocol-schemas.js';
import { clientMetadata, containsMetadata, describeThread, findThread, interruptsOf, selectFields, threadStatuses, visibleMessages, type ProtocolContext } from './protocol-threads.js';

type Json = Record<string, unknown>;

/** Threads whose status one query reads (their ids go into one IN list). */
const STATUS_BATCH = 100;

const countThreadsBody = z.object({ metadata: z.record(z.string(), z.unknown()).optional(), values: z.unknown().optional(), status: z.enum(['idle', 'busy', 'interrupted', 'error']).optional() }).strict();

/** A state whose step waits for a person also shows it in its values, as LangGraph's stream does. */
function withInterrupt(state: Json): Json {
  const interrupts = state.interrupts as Json[];
  return interrupts.length > 0 ? { ...state, values: { ...(state.values as Json), __interrupt__: interrupts } } : state;
}

/** Threads ↔ vigil threads; their metadata is the protocol's own record (migration 12). */
export function protocolThreadRoutes(context: ProtocolContext): FastifyPluginAsyncZod {
  const { deps, store } = context;
  const now = () => new Date().toISOString();

  /** The latest state carries what waits for a person: interrupts, the task that raised them, `__interrupt__`. */
  async function waiting(userId: string, threadId: string): Promise<{ interrupts: Json[]; tasks: Json[]; next: string[] }> {
    const interrupts = await interruptsOf(context, userId, threadId);
    if (interrupts.length === 0) return { interrupts, tasks: [], next: [] };
    return { interrupts, tasks: interrupts.map((interrupt) => ({ id: interrupt.id, name: 'agent', interrupts: [interrupt], error: null, checkpoint: null, state: null })), next: ['agent'] };
  }

  async function stateOf(userId: string, threadId: string, at?: number): Promise<Json> {
    const thread = await deps.conversations.getThread(userId, threadId);
    const messages = await visibleMessages(context, userId, threadId);
    const count = at ?? messages.length;
    if (count > messages.length) throw new VigilError('CHECKPOINT_NOT_FOUND', `no checkpoint "vigil-${count}" on thread "${threadId}"`);
    return withInterrupt(toState(thread, messages, count, count === messages.length ? await waiting(userId, threadId) : {}));
  }

  /** The statuses of these threads, one query per STATUS_BATCH of them. */
  async function statusesOf(userId: string, rows: ReadonlyArray<{ thread: ThreadRecord }>): Promise<Map<string, ThreadStatus>> {
    const statuses = new Map<string, ThreadStatus>();
    for (let start = 0; start < rows.length; start += STATUS_BATCH) {
      const batch = rows.slice(start, start + STATUS_BATCH).map((row) => row.thread.id);
      for (const [threadId, status] of await threadStatuses(context, userId, batch)) statuses.set(threadId, status);
    }
    return statuses;
  }

  return async (app) => {
    app.post('/threads', { schema: { tags: ['langgraph'], body: createThreadBody, response: { 200: anyObject, 409: errorBody, 422: errorBody } } }, async (request) => {
      const { userId, body } = request;
      if (body.supersteps !== undefined) throw new VigilError('UNSUPPORTED_OPTION', 'supersteps are not supported: a vigil thread starts empty');
      if (body.ttl !== undefined) throw new VigilError('UNSUPPORTED_OPTION', 'thread ttl is not supported: vigil keeps threads until they are deleted (or by its retention settings)');
      const metadata = clientMetadata(body.metadata);
      const threadId = body.thread_id ?? randomUUID();
      const exists = (existing: ThreadRecord) => {
        if (body.if_exists === 'do_nothing') return describeThread(context, existing);
        throw new VigilError('THREAD_EXISTS', `a thread "${threadId}" already exists`);
      };
      const existing = body.thread_id ? await findThread(context, userId, threadId) : undefined;
      if (existing) return exists(existing);
      let thread: ThreadRecord;
      try {
        // The thread and its metadata in one transaction: should the metadata fail, no thread is left (I11).
        thread = await deps.conversations.createThread(userId, { id: threadId, alsoWithin: (within, made) => store.setThreadMetadata(userId, made.id, metadata, now(), { within }) });
      } catch (error) {
        if (!body.thread_id) throw error;
        // Made meanwhile by another request of this user (concurrent creates): as if it had been there.
        const made = await findThread(context, userId, threadId);
        if (made) return exists(made);
        // The id is taken by another user's thread: that one stays invisible (I12).
        throw new VigilError('THREAD_EXISTS', `a thread "${threadId}" cannot be created`, { cause: error });
      }
      return describeThread(context, thread, metadata);
    });

    app.get('/threads/:thread_id', { schema: { tags: ['langgraph'], params: threadIdParams, querystring: getThreadQuery, response: { 200: anyObject, 404: errorBody } } }, async (request) =>
      describeThread(context, await deps.conversations.getThread(request.userId, request.params.thread_id)),
    );

    app.patch('/threads/:thread_id', { schema: { tags: ['langgraph'], params: threadIdParams, body: updateThreadBody, response: { 200: anyObject, 404: errorBody, 422: errorBody } } }, async (request) => {
      const { userId, body } = request;
      const thread = await deps.conversations.getThread(userId, request.params.thread_id);
      if (body.ttl !== undefined) throw new VigilError('UNSUPPORTED_OPTION', 'thread ttl is not supported');
      const merged = { ...(await store.threadMetadata(userId, thread.id)), ...clientMetadata(body.metadata) };
      await store.setThreadMetadata(userId, thread.id, merged, now());
      return describeThread(context, thread, merged);
    });

    app.delete('/threads/:thread_id', { schema: { tags: ['langgraph'], params: threadIdParams } }, async (request, reply) => {
      // Its metadata goes in the thread's own deletion transaction.
      await deps.conversations.deleteThread(request.userId, request.params.thread_id);
      return reply.status(204).send();
    });

    app.post('/threads/search', { schema: { tags: ['langgraph'], body: searchThreadsBody, response: { 200: z.array(anyObject), 422: errorBody } } }, async (request) => {
      const { userId, body } = request;
      if (body.values !== undefined || body.extract !== undefined) throw new VigilError('UNSUPPORTED_OPTION', 'searching threads by values or extracting from them is not supported');
      const stored = await store.threadMetadataOf(userId);
      const threads: ThreadRecord[] = [];
      let cursor: string | undefined;
      do {
        const page = await deps.conversations.listThreads(userId, { limit: 100, cursor });
        threads.push(...page.threads);
        cursor = page.nextCursor ?? undefined;
      } while (cursor && threads.length < 10_000);
      const ids = body.ids ? new Set(body.ids) : undefined;
      const kinds = new Map((await deps.agents.list(userId)).map((agent) => [agent.id, agent.kind]));
      const matching: Array<{ thread: ThreadRecord; metadata: Json }> = [];
      for (const thread of threads) {
        if (ids && !ids.has(thread.id)) continue;
        const metadata = threadMetadata(thread, stored.get(thread.id) ?? {}, kinds.get(thread.agentId));
        if (body.metadata && !containsMetadata(metadata, body.metadata)) continue;
        matching.push({ thread, metadata });
      }
      const key = body.sort_by ?? 'updated_at';
      // Every matching thread's status when it filters or orders them (one query per 100
      // threads); otherwise only the page's.
      const statuses = body.status !== undefined || key === 'status' ? await statusesOf(userId, matching) : new Map<string, ThreadStatus>();
      const rows = matching.filter((row) => body.status === undefined || statuses.get(row.thread.id) === body.status);
      const order = body.sort_order === 'asc' ? 1 : -1;
      const value = (row: (typeof rows)[number]) => (key === 'thread_id' ? row.thread.id : key === 'status' ? (statuses.get(row.thread.id) ?? '') : key === 'created_at' ? row.thread.createdAt : row.thread.updatedAt);
      rows.sort((a, b) => (value(a) < value(b) ? -order : value(a) > value(b) ? order : 0));
      const sliced = rows.slice(body.offset, body.offset + body.limit);
      const missing = sliced.filter((row) => !statuses.has(row.thread.id));
      for (const [threadId, status] of await statusesOf(userId, missing)) statuses.set(threadId, status);
      const page = sliced.map((row) => ({ ...row, status: statuses.get(row.thread.id) ?? 'idle' }));
      const found = await Promise.all(
        page.map(async (row) => {
          const messages = await visibleMessages(context, userId, row.thread.id);
          return toThread(row.thread, row.metadata, row.status, { messages: messages.map(toMessageDict) });
        }),
      );
      return selectFields(found, body.select);
    });

    app.post('/threads/count', { schema: { tags: ['langgraph'], body: countThreadsBody, response: { 200: z.number().int(), 422: errorBody } } }, async (request) => {
      const { userId, body } = request;
      if (body.values !== undefined) throw new VigilError('UNSUPPORTED_OPTION', 'counting threads by values is not supported');
      const stored = await store.threadMetadataOf(userId);
      const kinds = new Map((await deps.agents.list(userId)).map((agent) => [agent.id, agent.kind]));
      let count = 0;
      let cursor: string | undefined;
      do {
        const page = await deps.conversations.listThreads(userId, { limit: 100, cursor });
        const matching = page.threads.filter((thread) => !body.metadata || containsMetadata(threadMetadata(thread, stored.get(thread.id) ?? {}, kinds.get(thread.agentId)), body.metadata));
        // One status query for the page's threads, not three per thread.
        const statuses = body.status !== undefined ? await threadStatuses(context, userId, matching.map((thread) => thread.id)) : undefined;
        count += statuses ? matching.filter((thread) => statuses.get(thread.id) === body.status).length : matching.length;
        cursor = page.nextCursor ?? undefined;
      } while (cursor);
      return count;
    });

    app.get('/threads/:thread_id/state', { schema: { tags: ['langgraph'], params: threadIdParams, querystring: stateQuery, response: { 200: anyObject, 404: errorBody } } }, async (request) =>
      stateOf(request.userId, request.params.thread_id),
    );

    app.get('/threads/:thread_id/state/:checkpoint_id', { schema: { tags: ['langgraph'], params: checkpointParams, querystring: stateQuery, response: { 200: anyObject, 404: errorBody } } }, async (request) => {
      const count = countOfCheckpointId(request.params.checkpoint_id);
      // The thread first: another user's thread is not found whatever the checkpoint id (I12).
      if (count === undefined) {
        await deps.conversations.getThread(request.userId, request.params.thread_id);
        throw new VigilError('CHECKPOINT_NOT_FOUND', `no checkpoint "${request.params.checkpoint_id}" on thread "${request.params.thread_id}"`);
      }
      return stateOf(request.userId, request.params.thread_id, count);
    });

    app.post('/threads/:thread_id/state', { schema: { tags: ['langgraph'], params: threadIdParams, body: anyObject, response: { 200: anyObject, 404: errorBody, 422: errorBody } } }, async (request) => {
      await deps.conversations.getThread(request.userId, request.params.thread_id);
      throw new VigilError('UNSUPPORTED_OPTION', "updating a thread's state is not supported: vigil writes messages only through runs, so what a person said and what the system said stay apart (I1)");
    });

    app.post('/threads/:thread_id/history', { schema: { tags: ['langgraph'], params: threadIdParams, body: historyBody, response: { 200: z.array(anyObject), 404: errorBody, 422: errorBody } } }, async (request) => {
      const { userId, body } = request;
      if (body.metadata !== undefined || body.checkpoint !== undefined) throw new VigilError('UNSUPPORTED_OPTION', 'filtering history by metadata or checkpoint is not supported');
      const thread = await deps.conversations.getThread(userId, request.params.thread_id);
      const messages = await visibleMessages(context, userId, thread.id);
      // `before`: a checkpoint id, a checkpoint, or a config naming one (configurable.checkpoint_id), as the SDK sends it.
      const beforeObject = typeof body.before === 'object' ? ((body.before.configurable as Json | undefined) ?? body.before) : undefined;
      const before = typeof body.before === 'string' ? body.before : typeof beforeObject?.checkpoint_id === 'string' ? beforeObject.checkpoint_id : undefined;
      let start = messages.length;
      if (before !== undefined) {
        // A checkpoint the thread does not have is refused, as GET /state/{checkpoint_id} refuses it:
        // an empty page would read as "nothing before it". The thread was found first (another
        // user's is THREAD_NOT_FOUND above), and ids are counts, so nothing of another thread shows.
        const count = countOfCheckpointId(before);
        if (count === undefined || count > messages.length) throw new VigilError('CHECKPOINT_NOT_FOUND', `no checkpoint "${before}" on thread "${thread.id}"`);
        start = count - 1;
      }
      const latest = await waiting(userId, thread.id);
      const states: Json[] = [];
      for (let count = start; count >= 0 && states.length < body.limit; count -= 1) states.push(withInterrupt(toState(thread, messages, count, count === messages.length ? latest : {})));
      return states;
    });

    app.post('/threads/:thread_id/copy', { schema: { tags: ['langgraph'], params: threadIdParams, response: { 200: anyObject, 404: errorBody, 422: errorBody } } }, async (request) => {
      await deps.conversations.getThread(request.userId, request.params.thread_id);
      throw new VigilError('UNSUPPORTED_OPTION', 'copying a thread is not supported');
    });

  };
}
