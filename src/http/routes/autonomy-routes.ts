import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AutonomyService, ThreadAutonomy } from '../../app/autonomy/autonomy-service.js';
import { autonomyPolicySchema } from '../../domain/autonomy/autonomy-policy.js';
import { TIMER_STATES, type TimerRecord } from '../../domain/autonomy/timer.js';
import { agentParams, errorBody, idParam, threadParams } from '../schemas.js';

/**
 * Autonomy over HTTP: an agent's policy, and a thread's follow-ups (list, cancel one,
 * pause, resume). Owner-only: another user's agent, thread or timer answers 404 (I12).
 * Bodies and queries are strict zod objects.
 */
const timerParams = z.object({ threadId: idParam, timerId: idParam }).strict();
const listTimersQuery = z
  .object({
    state: z.enum(['pending', 'all']).default('pending'),
    limit: z.coerce.number().int().min(1).max(100).default(20),
  })
  .strict();

export const timerDto = z.object({
  id: z.string(),
  threadId: z.string(),
  agentId: z.string(),
  dueAt: z.string(),
  triggerType: z.string(),
  reason: z.string(),
  attempt: z.number().int().describe('1 for the first follow-up after a person\'s message'),
  state: z.enum(TIMER_STATES),
  stateReason: z.string().nullable().describe('why it was cancelled, dropped or skipped (cap_per_silence, quiet_hours, budget, …)'),
  runId: z.string().nullable().describe('the run that fired it'),
  createdAt: z.string(),
  firedAt: z.string().nullable(),
});
export const threadAutonomyDto = z.object({ threadId: z.string(), enabled: z.boolean(), paused: z.boolean(), pending: z.array(timerDto) });
const policyDto = z.object({ policy: autonomyPolicySchema });

export function toTimerDto(timer: TimerRecord): z.infer<typeof timerDto> {
  return {
    id: timer.id,
    threadId: timer.threadId,
    agentId: timer.agentId,
    dueAt: timer.dueAt,
    triggerType: timer.triggerType,
    reason: timer.reason,
    attempt: timer.attempt,
    state: timer.state,
    stateReason: timer.stateReason,
    runId: timer.runId,
    createdAt: timer.createdAt,
    firedAt: timer.firedAt,
  };
}

function toThreadAutonomyDto(status: ThreadAutonomy): z.infer<typeof threadAutonomyDto> {
  return { threadId: status.threadId, enabled: status.enabled, paused: status.paused, pending: status.pending.map(toTimerDto) };
}

export function autonomyRoutes(autonomy: AutonomyService): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      '/api/agents/:agentId/autonomy',
      { schema: { tags: ['autonomy'], description: "The agent's autonomy policy (defaults filled in; off unless enabled).", params: agentParams, response: { 200: policyDto, 404: errorBody } } },
      async (request) => ({ policy: await autonomy.getPolicy(request.userId, request.params.agentId) }),
    );

    app.put(
      '/api/agents/:agentId/autonomy',
      {
        schema: {
          tags: ['autonomy'],
          description: 'Replace the agent\'s autonomy policy; omitted fields take their defaults.',
          params: agentParams,
          body: autonomyPolicySchema,
          response: { 200: policyDto, 400: errorBody, 404: errorBody },
        },
      },
      async (request) => ({ policy: await autonomy.setPolicy(request.userId, request.params.agentId, request.body) }),
    );

    app.get(
      '/api/threads/:threadId/autonomy',
      { schema: { tags: ['autonomy'], description: 'Whether autonomy is on and paused here, and the pending follow-up.', params: threadParams, response: { 200: threadAutonomyDto, 404: errorBody } } },
      async (request) => toThreadAutonomyDto(await autonomy.status(request.userId, request.params.threadId)),
    );

    app.get(
      '/api/threads/:threadId/timers',
      {
        schema: {
          tags: ['autonomy'],
          description: "The thread's follow-up timers, newest first: pending ones (default), or all with their outcome.",
          params: threadParams,
          querystring: listTimersQuery,
          response: { 200: z.object({ timers: z.array(timerDto) }), 404: errorBody },
        },
      },
      async (request) => {
        const states = request.query.state === 'pending' ? (['pending'] as const) : undefined;
        const timers = await autonomy.listTimers(request.userId, request.params.threadId, { ...(states ? { states } : {}), limit: request.query.limit });
        return { timers: timers.map(toTimerDto) };
      },
    );

    app.delete(
      '/api/threads/:threadId/timers/:timerId',
      { schema: { tags: ['autonomy'], description: 'Cancel a pending follow-up.', params: timerParams, response: { 200: timerDto, 404: errorBody, 409: errorBody } } },
      async (request) => toTimerDto(await autonomy.cancelTimer(request.userId, request.params.threadId, request.params.timerId)),
    );

    app.post(
      '/api/threads/:threadId/autonomy/pause',
      { schema: { tags: ['autonomy'], description: 'Pause follow-ups on this thread (its pending one is cancelled).', params: threadParams, response: { 200: threadAutonomyDto, 404: errorBody } } },
      async (request) => toThreadAutonomyDto(await autonomy.pause(request.userId, request.params.threadId)),
    );

    app.post(
      '/api/threads/:threadId/autonomy/resume',
      {
        schema: {
          tags: ['autonomy'],
          description: "Resume follow-ups on this thread; when the agent's reply is the last word and a person has written here, its follow-up is planned at once. On a thread that is not paused nothing changes.",
          params: threadParams,
          response: { 200: threadAutonomyDto, 404: errorBody },
        },
      },
      async (request) => toThreadAutonomyDto(await autonomy.resume(request.userId, request.params.threadId)),
    );
  };
}
