import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { VigilError } from '../../domain/errors.js';
import { textOf } from '../../domain/message-content.js';
import { nextFireAfter, scheduleTimingSchema } from '../../domain/schedules/schedule-timing.js';
import type { ScheduleRecord } from '../../app/schedules/schedule-ports.js';
import type { ScheduleService } from '../../app/schedules/schedule-service.js';
import { anyObject, errorBody, threadIdParams } from './protocol-schemas.js';
import { findAssistant, resolveAssistant, selectFields, type ProtocolContext } from './protocol-threads.js';

/**
 * Crons ↔ vigil schedules. A cron's input message becomes the schedule's task: at each
 * fire vigil starts a `cron` run whose task message is system-written (internal, I2) and
 * whose envelope tells the model it was scheduled — the reply is what people see.
 */
const json = z.record(z.string(), z.unknown());
const cronBody = z
  .object({
    assistant_id: z.string().min(1).max(128),
    schedule: z.string().min(1).max(200),
    timezone: z.string().min(1).max(64).optional(),
    input: z.unknown().optional(),
    enabled: z.boolean().optional(),
    metadata: json.optional(),
    config: json.optional(),
    context: json.optional(),
    interrupt_before: z.unknown().optional(),
    interrupt_after: z.unknown().optional(),
    webhook: z.string().optional(),
    multitask_strategy: z.enum(['reject', 'enqueue', 'interrupt', 'rollback']).optional(),
    checkpoint_during: z.boolean().optional(),
    durability: z.string().optional(),
    stream_mode: z.unknown().optional(),
    stream_subgraphs: z.boolean().optional(),
    stream_resumable: z.boolean().optional(),
    end_time: z.string().optional(),
    on_run_completed: z.enum(['delete', 'keep']).optional(),
  })
  .strict();
type CronBody = z.infer<typeof cronBody>;
const updateBody = cronBody.omit({ assistant_id: true, multitask_strategy: true, checkpoint_during: true }).partial().strict();
const cronParams = z.object({ cron_id: z.string().min(1).max(128) }).strict();
const searchBody = z
  .object({
    assistant_id: z.string().max(128).optional(),
    thread_id: z.string().max(128).optional(),
    enabled: z.boolean().optional(),
    metadata: json.optional(),
    limit: z.coerce.number().int().min(1).max(1000).default(10),
    offset: z.coerce.number().int().min(0).default(0),
    sort_by: z.enum(['cron_id', 'assistant_id', 'thread_id', 'next_run_date', 'end_time', 'created_at', 'updated_at']).optional(),
    sort_order: z.enum(['asc', 'desc']).optional(),
    select: z.array(z.string()).optional(),
  })
  .strict();

function taskOf(input: unknown): string {
  const messages = (input as { messages?: unknown } | null)?.messages;
  if (!Array.isArray(messages) || messages.length !== 1) throw new VigilError('VALIDATION_FAILED', "a cron's input.messages must hold exactly one message: the task given at each fire");
  const text = textOf((messages[0] as { content?: unknown })?.content as never).trim();
  if (!text) throw new VigilError('VALIDATION_FAILED', "a cron's task must be text");
  return text;
}

function refuseUnsupported(body: Partial<CronBody>): void {
  const refused = (['interrupt_before', 'interrupt_after', 'webhook', 'end_time', 'stream_mode', 'stream_subgraphs', 'stream_resumable', 'durability'] as const).filter((key) => body[key] !== undefined);
  if (body.metadata && Object.keys(body.metadata).length > 0) refused.push('metadata' as never);
  if (body.config && Object.keys(body.config).length > 0) refused.push('config' as never);
  if (body.context && Object.keys(body.context).length > 0) refused.push('context' as never);
  if ('multitask_strategy' in body && body.multitask_strategy !== undefined && body.multitask_strategy !== 'enqueue') refused.push('multitask_strategy' as never);
  if ('checkpoint_during' in body && body.checkpoint_during === false) refused.push('checkpoint_during' as never);
  if (body.on_run_completed === 'delete') refused.push('on_run_completed "delete"' as never);
  if (refused.length > 0) throw new VigilError('UNSUPPORTED_OPTION', `cron options vigil's schedules do not have: ${refused.join(', ')} (a fire waits its turn on a busy thread, and a stateless cron's threads are kept)`);
}

function timingOf(schedule: string, timezone: string | undefined) {
  const timing = scheduleTimingSchema.safeParse({ kind: 'cron', cron: schedule, timezone: timezone ?? 'UTC' });
  if (!timing.success) throw new VigilError('VALIDATION_FAILED', `schedule: ${timing.error.issues.map((issue) => issue.message).join('; ')}`);
  return timing.data;
}

function toCron(schedule: ScheduleRecord): Record<string, unknown> {
  const timing = schedule.timing;
  const next = schedule.enabled ? nextFireAfter(timing, new Date()) : null;
  return {
    cron_id: schedule.id,
    assistant_id: schedule.agentId,
    thread_id: schedule.threadId,
    user_id: schedule.userId,
    schedule: timing.kind === 'cron' ? timing.cron : timing.at,
    timezone: timing.kind === 'cron' ? timing.timezone : null,
    end_time: null,
    payload: { input: { messages: [{ type: 'human', content: schedule.task }] } },
    metadata: { vigil: { schedule_id: schedule.id, name: schedule.name, target: schedule.target, missed_policy: schedule.missedPolicy } },
    next_run_date: next?.toISOString() ?? null,
    enabled: schedule.enabled,
    on_run_completed: schedule.target === 'new_thread' ? 'keep' : undefined,
    created_at: schedule.createdAt,
    updated_at: schedule.updatedAt,
  };
}

export function cronRoutes(context: ProtocolContext, schedules: ScheduleService): FastifyPluginAsyncZod {
  const create = async (userId: string, body: CronBody, threadId: string | undefined) => {
    // Everything that can refuse the cron first: resolving `agent` makes the person's
    // default agent on first use, which a refused request must not leave behind.
    refuseUnsupported(body);
    const task = taskOf(body.input);
    const timing = timingOf(body.schedule, body.timezone);
    if (threadId) await context.deps.conversations.getThread(userId, threadId);
    const agent = await resolveAssistant(context, userId, body.assistant_id);
    const schedule = await schedules.create(userId, {
      name: task.slice(0, 80),
      timing,
      agentId: agent.id,
      target: threadId ? 'thread' : 'new_thread',
      ...(threadId ? { threadId } : {}),
      task,
      missedPolicy: 'run_once',
      enabled: body.enabled ?? true,
    });
    return toCron(schedule);
  };
  return async (app) => {
    app.post('/runs/crons', { schema: { tags: ['langgraph'], body: cronBody, response: { 200: anyObject, 404: errorBody, 422: errorBody } } }, async (request) => create(request.userId, request.body, undefined));
    app.post('/threads/:thread_id/runs/crons', { schema: { tags: ['langgraph'], params: threadIdParams, body: cronBody, response: { 200: anyObject, 404: errorBody, 422: errorBody } } }, async (request) =>
      create(request.userId, request.body, request.params.thread_id),
    );
    app.patch('/runs/crons/:cron_id', { schema: { tags: ['langgraph'], params: cronParams, body: updateBody, response: { 200: anyObject, 404: errorBody, 422: errorBody } } }, async (request) => {
      const { userId, body } = request;
      refuseUnsupported(body);
      const current = await schedules.get(userId, request.params.cron_id);
      const timezone = body.timezone ?? (current.timing.kind === 'cron' ? current.timing.timezone : undefined);
      const cron = body.schedule ?? (current.timing.kind === 'cron' ? current.timing.cron : undefined);
      const changes = {
        ...(body.schedule !== undefined || body.timezone !== undefined ? { timing: timingOf(cron ?? '', timezone) } : {}),
        ...(body.input !== undefined ? { task: taskOf(body.input) } : {}),
        ...(body.enabled !== undefined ? { enabled: body.enabled } : {}),
      };
      return toCron(Object.keys(changes).length > 0 ? await schedules.update(userId, current.id, changes) : current);
    });
    app.delete('/runs/crons/:cron_id', { schema: { tags: ['langgraph'], params: cronParams } }, async (request, reply) => {
      await schedules.delete(request.userId, request.params.cron_id);
      return reply.status(204).send();
    });
    app.post('/runs/crons/search', { schema: { tags: ['langgraph'], body: searchBody, response: { 200: z.array(anyObject), 422: errorBody } } }, async (request) => {
      const { userId, body } = request;
      if (body.metadata && Object.keys(body.metadata).length > 0) throw new VigilError('UNSUPPORTED_OPTION', 'crons carry no client metadata in vigil');
      let found = (await schedules.list(userId)).filter((schedule) => schedule.timing.kind === 'cron');
      if (body.assistant_id) {
        // A search only reads: the default agent an alias names is looked up, never made.
        const agentId = (await findAssistant(context, userId, body.assistant_id))?.id;
        found = found.filter((schedule) => schedule.agentId === agentId);
      }
      if (body.thread_id) found = found.filter((schedule) => schedule.threadId === body.thread_id);
      if (body.enabled !== undefined) found = found.filter((schedule) => schedule.enabled === body.enabled);
      const crons = found.map(toCron);
      const key = body.sort_by ?? 'created_at';
      const order = body.sort_order === 'asc' ? 1 : -1;
      crons.sort((a, b) => (String(a[key]) < String(b[key]) ? -order : String(a[key]) > String(b[key]) ? order : 0));
      return selectFields(crons.slice(body.offset, body.offset + body.limit), body.select);
    });
  };
}
