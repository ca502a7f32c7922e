import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { HttpDependencies } from '../http-dependencies.js';
import { eventIdSchema, lastEventIdOf, openEventStream, writeOrDrop } from '../sse.js';
import { errorBody, threadParams } from '../schemas.js';

const HEARTBEAT_MS = 15_000;

/**
 * `GET /api/threads/{id}/events`: every event of the thread as server-sent events, from
 * whichever instance produced it (I15), each with its `id:`; a client that reconnects with
 * `Last-Event-ID` (or `?after=`) gets the events it missed within the replay window, in
 * order, once, then the live ones. The stream stays open until the client goes away.
 */
export function threadEventRoutes(deps: HttpDependencies): FastifyPluginAsyncZod {
  return async (app) => {
    // These streams never end on their own: a stopping server ends them (a client reconnects elsewhere and resumes).
    const open = new Set<() => void>();
    app.addHook('preClose', async () => {
      for (const end of open) end();
    });
    app.get(
      '/api/threads/:threadId/events',
      {
        schema: {
          tags: ['threads'],
          description: 'Every event of the thread as server-sent events (`id:`, `event: <type>`, `data: <JSON>`), whichever instance ran it. Resume with Last-Event-ID or ?after=<id>.',
          params: threadParams,
          querystring: z.object({ after: eventIdSchema.optional() }).strict(),
          response: { 200: z.string(), 400: errorBody, 404: errorBody },
        },
      },
      async (request, reply) => {
        await deps.conversations.getThread(request.userId, request.params.threadId); // I12: another user's thread is a 404
        const afterEventId = lastEventIdOf(request) ?? request.query.after;
        const raw = openEventStream(request, reply, { metrics: deps.metrics });
        // Ends on the client going away (or being dropped for not reading), the thread's
        // deletion, or the server stopping; listened for before anything can end it.
        let end!: () => void;
        const ended = new Promise<void>((resolve) => {
          end = () => {
            open.delete(end);
            resolve();
          };
        });
        open.add(end);
        raw.on('close', end);
        // Gone while the thread was looked up: its close has been and gone.
        if (raw.destroyed || request.raw.socket?.destroyed === true) end();
        raw.write(': subscribed\n\n'); // the acknowledgement: no later event can be missed
        const unsubscribe = deps.events.subscribe(
          request.params.threadId,
          (event, eventId) => {
            writeOrDrop(raw, `${eventId === undefined ? '' : `id: ${eventId}\n`}event: ${event.type}\ndata: ${JSON.stringify(eventId === undefined ? event : { ...event, eventId })}\n\n`);
            if (event.type === 'thread.deleted') end();
          },
          { afterEventId },
        );
        // Deleted while it was looked up (its thread.deleted came before the subscription): end.
        if (!(await deps.conversations.ownsThread(request.userId, request.params.threadId))) end();
        const heartbeat = setInterval(() => writeOrDrop(raw, ': heartbeat\n\n'), HEARTBEAT_MS);
        heartbeat.unref();
        await ended;
        if (!raw.writableEnded) raw.end();
        clearInterval(heartbeat);
        unsubscribe();
      },
    );
  };
}
