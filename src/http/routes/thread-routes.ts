import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { HttpDependencies } from '../http-dependencies.js';
import {
  createThreadBody,
  errorBody,
  historyQuery,
  listRunsQuery,
  listThreadsQuery,
  messageDto,
  runDto,
  runParams,
  sendMessageBody,
  threadDto,
  threadContextDto,
  threadParams,
  updateThreadBody,
  toMessageDto,
  toRunDto,
  toThreadContextDto,
  toThreadDto,
} from '../schemas.js';
import { answerRun } from '../sse.js';

export function threadRoutes(deps: HttpDependencies): FastifyPluginAsyncZod {
  return async (app) => {
    app.post('/api/threads', { schema: { tags: ['threads'], body: createThreadBody, response: { 201: threadDto, 404: errorBody } } }, async (request, reply) => {
      const thread = await deps.conversations.createThread(request.userId, request.body);
      return reply.status(201).send(toThreadDto(thread));
    });

    app.get(
      '/api/threads',
      { schema: { tags: ['threads'], querystring: listThreadsQuery, response: { 200: z.object({ threads: z.array(threadDto), nextCursor: z.string().nullable() }) } } },
      async (request) => {
        const page = await deps.conversations.listThreads(request.userId, request.query);
        return { threads: page.threads.map(toThreadDto), nextCursor: page.nextCursor };
      },
    );

    app.get('/api/threads/:threadId', { schema: { tags: ['threads'], params: threadParams, response: { 200: threadDto, 404: errorBody } } }, async (request) => {
      const thread = await deps.conversations.getThread(request.userId, request.params.threadId);
      const waiting = deps.approvals ? await deps.approvals.hasPending(thread.id) : false;
      return { ...toThreadDto(thread), status: waiting ? ('interrupted' as const) : ('idle' as const) };
    });

    app.patch(
      '/api/threads/:threadId',
      { schema: { tags: ['threads'], description: 'Rename the thread (title null clears it).', params: threadParams, body: updateThreadBody, response: { 200: threadDto, 400: errorBody, 404: errorBody } } },
      async (request) => toThreadDto(await deps.conversations.renameThread(request.userId, request.params.threadId, request.body.title)),
    );

    app.delete(
      '/api/threads/:threadId',
      { schema: { tags: ['threads'], description: 'Delete the thread, its messages and pending follow-up, and schedules or webhooks bound to it.', params: threadParams } },
      async (request, reply) => {
        await deps.conversations.deleteThread(request.userId, request.params.threadId);
        return reply.status(204).send();
      },
    );

    app.get(
      '/api/threads/:threadId/history',
      {
        schema: {
          tags: ['threads'],
          description: 'Visible messages only (I2), newest page first, oldest first within a page. The owner may add include=internal.',
          params: threadParams,
          querystring: historyQuery,
          response: { 200: z.object({ messages: z.array(messageDto), nextCursor: z.string().nullable() }), 404: errorBody },
        },
      },
      async (request) => {
        const includeInternal = request.query.include === 'internal';
        const page = await deps.conversations.history(request.userId, request.params.threadId, { includeInternal, limit: request.query.limit, cursor: request.query.cursor });
        return { messages: page.messages.map((message) => toMessageDto(message, includeInternal)), nextCursor: page.nextCursor };
      },
    );

    app.get(
      '/api/threads/:threadId/context',
      {
        schema: {
          tags: ['threads'],
          description:
            "What the agent's next model call on this thread would receive (I14): budget, system prompt, envelope placeholder, the conversation summary with what it covers, and the most recent messages that fit, with token counts. History keeps every message.",
          params: threadParams,
          response: { 200: threadContextDto, 404: errorBody },
        },
      },
      async (request) => toThreadContextDto(await deps.threadContext.describe(request.userId, request.params.threadId)),
    );

    app.post(
      '/api/threads/:threadId/messages',
      {
        schema: {
          tags: ['threads'],
          description: 'Send a message. With Accept: text/event-stream the run streams as server-sent events; otherwise the answer is JSON once the run ends.',
          params: threadParams,
          body: sendMessageBody,
          response: { 200: z.object({ run: runDto, messages: z.array(messageDto) }), 404: errorBody },
        },
      },
      async (request, reply) => {
        const { userId } = request;
        const { threadId } = request.params;
        // Check ownership before any streaming starts, so a 404 is a plain 404.
        await deps.conversations.getThread(userId, threadId);
        const runId = randomUUID();
        const correlationId = request.id;
        const send = () => deps.conversations.sendMessage(userId, threadId, request.body.content, { runId, correlationId });
        return answerRun(deps, request, reply, { threadId, runId }, send);
      },
    );

    app.get(
      '/api/threads/:threadId/runs',
      { schema: { tags: ['runs'], params: threadParams, querystring: listRunsQuery, response: { 200: z.object({ runs: z.array(runDto) }), 404: errorBody } } },
      async (request) => ({ runs: (await deps.conversations.listRuns(request.userId, request.params.threadId, request.query.limit)).map(toRunDto) }),
    );

    app.get('/api/runs/:runId', { schema: { tags: ['runs'], params: runParams, response: { 200: runDto, 404: errorBody } } }, async (request) =>
      toRunDto(await deps.conversations.getRun(request.userId, request.params.runId)),
    );

    app.post('/api/runs/:runId/cancel', { schema: { tags: ['runs'], params: runParams, response: { 202: runDto, 404: errorBody } } }, async (request, reply) =>
      reply.status(202).send(toRunDto(await deps.conversations.cancelRun(request.userId, request.params.runId))),
    );
  };
}
