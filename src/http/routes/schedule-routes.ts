import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { FireRecord, ScheduleRecord } from '../../app/schedules/schedule-ports.js';
import type { ScheduleService } from '../../app/schedules/schedule-service.js';
import { MISSED_POLICIES } from '../../domain/schedules/missed-policy.js';
import { firesBetween, scheduleTimingSchema } from '../../domain/schedules/schedule-timing.js';
import { errorBody, idParam } from '../schemas.js';

const scheduleParams = z.object({ scheduleId: idParam }).strict();
const createScheduleBody = z
  .object({
    name: z.string().trim().min(1).max(200),
    timing: scheduleTimingSchema,
    agentId: idParam.optional(),
    target: z.enum(['thread', 'new_thread']).default('new_thread'),
    threadId: idParam.optional(),
    task: z.string().trim().min(1).max(10_000),
    missedPolicy: z.enum(MISSED_POLICIES).default('skip'),
    enabled: z.boolean().default(true),
  })
  .strict();
const updateScheduleBody = z
  .object({
    name: z.string().trim().min(1).max(200).optional(),
    timing: scheduleTimingSchema.optional(),
    task: z.string().trim().min(1).max(10_000).optional(),
    missedPolicy: z.enum(MISSED_POLICIES).optional(),
    enabled: z.boolean().optional(),
  })
  .strict()
  .refine((value) => Object.keys(value).length > 0, 'nothing to change');
const previewBody = z.object({ timing: scheduleTimingSchema, count: z.number().int().min(1).max(20).default(5) }).strict();
const firesQuery = z.object({ limit: z.coerce.number().int().min(1).max(100).default(20) }).strict();

export const scheduleDto = z.object({
  id: z.string(),
  agentId: z.string(),
  name: z.string(),
  timing: z.unknown(),
  target: z.enum(['thread', 'new_thread']),
  threadId: z.string().nullable(),
  task: z.string(),
  missedPolicy: z.enum(MISSED_POLICIES),
  enabled: z.boolean(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export const fireDto = z.object({
  id: z.string(),
  scheduledFor: z.string(),
  status: z.enum(['running', 'succeeded', 'failed', 'skipped']),
  reason: z.string().nullable(),
  runId: z.string().nullable(),
  threadId: z.string().nullable(),
  startedAt: z.string(),
  endedAt: z.string().nullable(),
});

function toScheduleDto(schedule: ScheduleRecord): z.infer<typeof scheduleDto> {
  const { userId: _userId, ...rest } = schedule;
  return rest;
}

function toFireDto(fire: FireRecord): z.infer<typeof fireDto> {
  const { userId: _userId, scheduleId: _scheduleId, ...rest } = fire;
  return rest;
}

/** Cron and one-shot schedules; each fire starts a run with trigger `cron`. */
export function scheduleRoutes(schedules: ScheduleService): FastifyPluginAsyncZod {
  return async (app) => {
    app.post('/api/schedules', { schema: { tags: ['schedules'], body: createScheduleBody, response: { 201: scheduleDto, 400: errorBody, 404: errorBody } } }, async (request, reply) =>
      reply.status(201).send(toScheduleDto(await schedules.create(request.userId, request.body))),
    );
    app.post(
      '/api/schedules/preview',
      {
        schema: {
          tags: ['schedules'],
          description: 'The next fire times of a timing (cron + time zone, or a one-shot), without creating anything; for a form to show before saving.',
          body: previewBody,
          response: { 200: z.object({ fires: z.array(z.string()) }), 400: errorBody },
        },
      },
      // A bound of ten years keeps a cron that never matches (Feb 30) from looping.
      async (request) => ({ fires: firesBetween(request.body.timing, new Date(), new Date(Date.now() + 10 * 365 * 86_400_000), request.body.count).map((at) => at.toISOString()) }),
    );
    app.get('/api/schedules', { schema: { tags: ['schedules'], response: { 200: z.object({ schedules: z.array(scheduleDto) }) } } }, async (request) => ({
      schedules: (await schedules.list(request.userId)).map(toScheduleDto),
    }));
    app.get('/api/schedules/:scheduleId', { schema: { tags: ['schedules'], params: scheduleParams, response: { 200: scheduleDto, 404: errorBody } } }, async (request) =>
      toScheduleDto(await schedules.get(request.userId, request.params.scheduleId)),
    );
    app.patch(
      '/api/schedules/:scheduleId',
      { schema: { tags: ['schedules'], params: scheduleParams, body: updateScheduleBody, response: { 200: scheduleDto, 404: errorBody } } },
      async (request) => toScheduleDto(await schedules.update(request.userId, request.params.scheduleId, request.body)),
    );
    app.delete('/api/schedules/:scheduleId', { schema: { tags: ['schedules'], params: scheduleParams } }, async (request, reply) => {
      await schedules.delete(request.userId, request.params.scheduleId);
      return reply.status(204).send();
    });
    app.get(
      '/api/schedules/:scheduleId/fires',
      { schema: { tags: ['schedules'], params: scheduleParams, querystring: firesQuery, response: { 200: z.object({ fires: z.array(fireDto) }), 404: errorBody } } },
      async (request) => ({ fires: (await schedules.fires(request.userId, request.params.scheduleId, request.query.limit)).map(toFireDto) }),
    );
  };
}
