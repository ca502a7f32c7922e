import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { CheckInRecord } from '../../app/check-ins/check-in-ports.js';
import { CHECK_IN_STATES } from '../../app/check-ins/check-in-ports.js';
import type { CheckInService } from '../../app/check-ins/check-in-service.js';
import type { HttpDependencies } from '../http-dependencies.js';
import { errorBody, idParam } from '../schemas.js';

const threadParams = z.object({ threadId: idParam }).strict();
const checkInParams = z.object({ threadId: idParam, checkInId: idParam }).strict();
const listQuery = z.object({ state: z.enum(['pending', 'all']).default('pending') }).strict();

const checkInDto = z.object({
  id: z.string(),
  threadId: z.string(),
  dueAt: z.string(),
  reason: z.string(),
  setAt: z.string(),
  state: z.enum(CHECK_IN_STATES),
  stateReason: z.string().nullable(),
  runId: z.string().nullable(),
  firedAt: z.string().nullable(),
});

function toCheckInDto(record: CheckInRecord): z.infer<typeof checkInDto> {
  return { id: record.id, threadId: record.threadId, dueAt: record.dueAt, reason: record.reason, setAt: record.setAt, state: record.state, stateReason: record.stateReason, runId: record.runId, firedAt: record.firedAt };
}

/** A thread's check-ins (timers the agent set itself): the person sees and cancels them. */
export function checkInRoutes(checkIns: CheckInService, deps: Pick<HttpDependencies, 'conversations'>): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      '/api/threads/:threadId/check-ins',
      { schema: { tags: ['autonomy'], params: threadParams, querystring: listQuery, response: { 200: z.object({ checkIns: z.array(checkInDto) }), 404: errorBody } } },
      async (request) => {
        await deps.conversations.getThread(request.userId, request.params.threadId); // I12: 404 for another user's thread
        return { checkIns: (await checkIns.list(request.userId, request.params.threadId, request.query.state === 'pending')).map(toCheckInDto) };
      },
    );

    app.delete(
      '/api/threads/:threadId/check-ins/:checkInId',
      { schema: { tags: ['autonomy'], params: checkInParams, response: { 200: checkInDto, 404: errorBody, 409: errorBody } } },
      async (request) => {
        await deps.conversations.getThread(request.userId, request.params.threadId);
        return toCheckInDto(await checkIns.cancel(request.userId, request.params.threadId, request.params.checkInId, 'person'));
      },
    );
  };
}
