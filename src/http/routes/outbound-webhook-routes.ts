import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { OutboundWebhookRecord } from '../../app/outbound/outbound-ports.js';
import type { OutboundWebhookService } from '../../app/outbound/outbound-webhook-service.js';
import { OUTBOUND_EVENT_TYPES } from '../../domain/outbound/address-policy.js';
import { agentParams, errorBody, idParam, listLimit } from '../schemas.js';

const webhookParams = z.object({ agentId: idParam, webhookId: idParam }).strict();
/** Newest first; 100 unless asked for fewer (all the route gave before it took a limit). */
const listDeliveriesQuery = z.object({ limit: listLimit(100, 100) }).strict();
const createBody = z.object({ url: z.string().url().max(2000), events: z.array(z.enum(OUTBOUND_EVENT_TYPES)).min(1).max(OUTBOUND_EVENT_TYPES.length) }).strict();
const webhookDto = z.object({
  id: z.string(),
  agentId: z.string(),
  url: z.string(),
  events: z.array(z.enum(OUTBOUND_EVENT_TYPES)),
  enabled: z.boolean(),
  disabledReason: z.string().nullable(),
  consecutiveFailures: z.number().int(),
  createdAt: z.string(),
});
const deliveryDto = z.object({
  id: z.string(),
  eventType: z.enum(OUTBOUND_EVENT_TYPES),
  status: z.enum(['pending', 'delivered', 'failed']),
  attempts: z.array(z.object({ attempt: z.number().int(), at: z.string(), statusCode: z.number().int().nullable(), error: z.string().nullable() })),
  lastError: z.string().nullable(),
  createdAt: z.string(),
});

function toWebhookDto(webhook: OutboundWebhookRecord): z.infer<typeof webhookDto> {
  return { id: webhook.id, agentId: webhook.agentId, url: webhook.url, events: webhook.events, enabled: webhook.enabled, disabledReason: webhook.disabledReason, consecutiveFailures: webhook.consecutiveFailures, createdAt: webhook.createdAt };
}

/** An agent's outbound webhooks: subscribe, list, delete, and each delivery with its attempts. */
export function outboundWebhookRoutes(webhooks: OutboundWebhookService): FastifyPluginAsyncZod {
  return async (app) => {
    app.post(
      '/api/agents/:agentId/webhooks',
      { schema: { tags: ['webhooks'], description: 'Subscribe a URL to the agent\'s events; the signing secret (Standard Webhooks) is shown once.', params: agentParams, body: createBody, response: { 201: webhookDto.extend({ secret: z.string() }), 400: errorBody, 404: errorBody } } },
      async (request, reply) => {
        const { webhook, secret } = await webhooks.create(request.userId, request.params.agentId, request.body);
        return reply.status(201).send({ ...toWebhookDto(webhook), secret });
      },
    );
    app.get('/api/agents/:agentId/webhooks', { schema: { tags: ['webhooks'], params: agentParams, response: { 200: z.object({ webhooks: z.array(webhookDto) }), 404: errorBody } } }, async (request) => ({
      webhooks: (await webhooks.list(request.userId, request.params.agentId)).map(toWebhookDto),
    }));
    app.delete('/api/agents/:agentId/webhooks/:webhookId', { schema: { tags: ['webhooks'], params: webhookParams } }, async (request, reply) => {
      await webhooks.delete(request.userId, request.params.agentId, request.params.webhookId);
      return reply.status(204).send();
    });
    app.get(
      '/api/agents/:agentId/webhooks/:webhookId/deliveries',
      { schema: { tags: ['webhooks'], params: webhookParams, querystring: listDeliveriesQuery, response: { 200: z.object({ deliveries: z.array(deliveryDto) }), 404: errorBody } } },
      async (request) => ({
        deliveries: (await webhooks.deliveries(request.userId, request.params.agentId, request.params.webhookId, request.query.limit)).map((delivery) => ({
          id: delivery.id,
          eventType: delivery.eventType,
          status: delivery.status,
          attempts: delivery.attemptLog,
          lastError: delivery.lastError,
          createdAt: delivery.createdAt,
        })),
      }),
    );
  };
}
