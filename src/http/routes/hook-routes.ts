import { z } from 'zod';
import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import type { FastifyRequest } from 'fastify';
import type { HookService } from '../../app/webhooks/hook-service.js';
import type { HookRecord } from '../../app/webhooks/hook-store.js';
import { WEBHOOK_ID_HEADER, WEBHOOK_SIGNATURE_HEADER, WEBHOOK_TIMESTAMP_HEADER } from '../../app/webhooks/hook-signature.js';
import { PAYLOAD_PATH, PAYLOAD_PATH_MAX_CHARS, TEMPLATE_MAX_CHARS } from '../../app/webhooks/hook-template.js';
import { WEBHOOK_PAYLOAD_MAX_KEYS } from '../../domain/envelope/run-meta.js';
import { VigilError } from '../../domain/errors.js';
import { errorBody, idParam } from '../schemas.js';

const hookParams = z.object({ hookId: idParam }).strict();
const listHooksQuery = z.object({ limit: z.coerce.number().int().min(1).max(100).default(50) }).strict();

export const createHookBody = z
  .object({
    name: z.string().trim().min(1).max(200),
    agentId: idParam.optional().describe('the agent that answers; default: your default agent, or the thread\'s'),
    threadId: idParam.optional().describe('run every delivery on this thread; omitted: a new thread per delivery'),
    taskTemplate: z.string().min(1).max(TEMPLATE_MAX_CHARS).describe('task text; placeholders {{payload.<path>}}, {{hook.id}}, {{hook.name}}, {{delivery.id}}'),
    payloadFields: z
      .array(z.string().max(PAYLOAD_PATH_MAX_CHARS).regex(PAYLOAD_PATH, 'a dotted path of [A-Za-z0-9_-] words'))
      .min(1)
      .max(WEBHOOK_PAYLOAD_MAX_KEYS)
      .optional()
      .describe('payload paths exposed to the run; omitted: the first scalar fields'),
  })
  .strict();

export const hookDto = z.object({
  id: z.string(),
  name: z.string(),
  agentId: z.string(),
  threadId: z.string().nullable(),
  taskTemplate: z.string(),
  payloadFields: z.array(z.string()).nullable(),
  deliveryUrl: z.string().describe('POST signed deliveries here'),
  createdAt: z.string(),
});
const createdHookDto = hookDto.extend({ secret: z.string().describe('shown once, now: store it; it signs deliveries (Standard Webhooks format: whsec_ + base64)') });
const acceptedDto = z.object({ runId: z.string(), threadId: z.string(), deliveryId: z.string() });
const listDeliveriesQuery = z.object({ limit: z.coerce.number().int().min(1).max(100).default(50) }).strict();
export const hookDeliveryDto = z.object({
  deliveryId: z.string().describe("the sender's webhook-id"),
  receivedAt: z.string(),
  runId: z.string(),
  threadId: z.string().nullable().describe('null until the run is recorded'),
  threadDeleted: z.boolean().describe('the thread that held its task was deleted; the delivery stays recorded, and a replay of it is still refused'),
  runStatus: z.string().nullable().describe('the run as it stands; null until it is recorded'),
  runReason: z.string().nullable(),
});

function toHookDto(hook: HookRecord): z.infer<typeof hookDto> {
  return {
    id: hook.id,
    name: hook.name,
    agentId: hook.agentId,
    threadId: hook.threadId,
    taskTemplate: hook.taskTemplate,
    payloadFields: hook.payloadFields,
    deliveryUrl: `/api/hooks/${hook.id}`,
    createdAt: hook.createdAt,
  };
}

/** Webhook management (bearer auth, owner only) and the signed delivery route. */
export function hookRoutes(hooks: HookService): FastifyPluginAsyncZod {
  return async (app) => {
    app.post('/api/hooks', { schema: { tags: ['hooks'], body: createHookBody, response: { 201: createdHookDto, 400: errorBody, 404: errorBody } } }, async (request, reply) => {
      const { hook, secret } = await hooks.create(request.userId, request.body);
      return reply.status(201).send({ ...toHookDto(hook), secret });
    });

    app.get('/api/hooks', { schema: { tags: ['hooks'], querystring: listHooksQuery, response: { 200: z.object({ hooks: z.array(hookDto) }) } } }, async (request) => ({
      hooks: (await hooks.list(request.userId, request.query.limit)).map(toHookDto),
    }));

    app.get('/api/hooks/:hookId', { schema: { tags: ['hooks'], params: hookParams, response: { 200: hookDto, 404: errorBody } } }, async (request) =>
      toHookDto(await hooks.get(request.userId, request.params.hookId)),
    );

    app.get(
      '/api/hooks/:hookId/deliveries',
      { schema: { tags: ['hooks'], description: 'Accepted deliveries of your webhook, newest first, each with the run it started.', params: hookParams, querystring: listDeliveriesQuery, response: { 200: z.object({ deliveries: z.array(hookDeliveryDto) }), 404: errorBody } } },
      async (request) => ({
        deliveries: (await hooks.deliveries(request.userId, request.params.hookId, request.query.limit)).map(({ delivery, run }) => ({
          deliveryId: delivery.deliveryId,
          receivedAt: delivery.receivedAt,
          runId: delivery.runId,
          threadId: run?.threadId ?? null,
          threadDeleted: delivery.threadDeleted,
          runStatus: run?.status ?? null,
          runReason: run?.reason ?? null,
        })),
      }),
    );

    app.delete('/api/hooks/:hookId', { schema: { tags: ['hooks'], params: hookParams } }, async (request, reply) => {
      await hooks.delete(request.userId, request.params.hookId);
      return reply.status(204).send();
    });

    // The delivery route lives in its own plugin so that its body parser — raw bytes, which
    // the signature covers — applies to it alone.
    await app.register(async (scoped) => {
      scoped.removeAllContentTypeParsers();
      scoped.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
      scoped.withTypeProvider<ZodTypeProvider>().post(
        '/api/hooks/:hookId',
        {
          // No bearer token: the signature is the authentication.
          config: { public: true },
          schema: {
            tags: ['hooks'],
            description: `A delivery signed per Standard Webhooks (https://www.standardwebhooks.com): headers ${WEBHOOK_ID_HEADER} (unique id, each used once), ${WEBHOOK_TIMESTAMP_HEADER} (unix seconds) and ${WEBHOOK_SIGNATURE_HEADER}: v1,<base64 HMAC-SHA256(secret, "<id>.<timestamp>.<raw body>")>. Answers 202 with the run it started, once its task is stored; 409 HOOK_DELIVERY_REPLAYED for an id whose task this hook already stored, 409 HOOK_DELIVERY_PENDING for one whose earlier attempt may still be storing it (retry later); 503 HOOK_TASK_NOT_STORED when its run ended before its task was stored (nothing accepted: retry).`,
            security: [],
            params: hookParams,
            response: { 202: acceptedDto, 400: errorBody, 401: errorBody, 404: errorBody, 409: errorBody, 503: errorBody },
          },
        },
        async (request, reply) => {
          const rawBody = request.body;
          if (!Buffer.isBuffer(rawBody)) throw new VigilError('VALIDATION_FAILED', 'a webhook delivery needs a JSON body');
          const accepted = await hooks.receive(request.params.hookId, {
            headers: { id: header(request, WEBHOOK_ID_HEADER), timestamp: header(request, WEBHOOK_TIMESTAMP_HEADER), signature: header(request, WEBHOOK_SIGNATURE_HEADER) },
            rawBody,
            correlationId: request.id,
          });
          return reply.status(202).send(accepted);
        },
      );
    });
  };
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return typeof value === 'string' ? value : undefined;
}
