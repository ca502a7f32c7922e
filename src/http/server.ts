import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import fastifySwagger from '@fastify/swagger';
import fastifyWebsocket from '@fastify/websocket';
import { jsonSchemaTransform, serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { HttpDependencies } from './http-dependencies.js';
import { errorHandler, errorPayload, notFoundHandler, toVigilError } from './errors.js';
import { agentRoutes } from './routes/agent-routes.js';
import { approvalRoutes } from './routes/approval-routes.js';
import { checkInRoutes } from './routes/check-in-routes.js';
import { autonomyReportRoutes } from './routes/autonomy-report-routes.js';
import { outboundWebhookRoutes } from './routes/outbound-webhook-routes.js';
import { autonomyRoutes } from './routes/autonomy-routes.js';
import { channelRoutes } from './routes/channel-routes.js';
import { hookRoutes } from './routes/hook-routes.js';
import { planRoutes } from './routes/plan-routes.js';
import { threadRoutes } from './routes/thread-routes.js';
import { scheduleRoutes } from './routes/schedule-routes.js';
import { registerWebSocket } from './websocket.js';

const PUBLIC_PATHS = new Set(['/healthz', '/readyz', '/api/openapi.json']);

/** The Fastify application: routes, zod schemas, auth, errors, WebSocket. Not listening yet. */
export async function buildHttpServer(deps: HttpDependencies): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    bodyLimit: deps.bodyLimit,
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.-]{1,128}$/.test(given) ? given : randomUUID();
    },
    logController: new LogController({ requestIdLogLabel: 'requestId' }),
    return503OnClosing: true,
  }).withTypeProvider<ZodTypeProvider>();

  // JSON only: a text/plain body is refused with 415 instead of reaching a schema as a string.
  app.removeContentTypeParser('text/plain');
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler(notFoundHandler);
  app.decorateRequest('userId', '');

  await app.register(fastifySwagger, {
    openapi: {
      info: { title: 'vigil', version: '0.1.0', description: 'A server for LLM agents that act on their own.' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    transform: jsonSchemaTransform,
  });
  await app.register(fastifyWebsocket, {
    options: { maxPayload: 1024 * 1024 },
    // On a graceful stop, tell each client why its socket closes (1001: going away), so it
    // reconnects (to another instance, or to this one once it is back).
    preClose(done) {
      for (const client of this.websocketServer.clients) client.close(1001, 'the server is stopping');
      this.websocketServer.close();
      done();
    },
  });

  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    deps.withLogContext({ requestId: request.id }, () => {
      const path = request.url.split('?')[0] ?? '';
      if (PUBLIC_PATHS.has(path) || request.routeOptions.config?.public === true) return done();
      try {
        const token = new URLSearchParams(request.url.split('?')[1] ?? '').get('token') ?? undefined;
        // Browsers cannot set headers on a WebSocket: it may pass ?token= instead.
        request.userId = deps.auth.authenticate(request.headers.authorization, path === '/api/ws' ? token : undefined);
        done();
      } catch (error) {
        const vigilError = toVigilError(error);
        void reply.status(vigilError.status).send(errorPayload(vigilError));
      }
    });
  });

  app.get('/healthz', { schema: { tags: ['health'], response: { 200: z.object({ status: z.literal('ok') }) } } }, async () => ({ status: 'ok' as const }));
  app.get(
    '/readyz',
    { schema: { tags: ['health'], response: { 200: z.object({ status: z.literal('ready'), storage: z.string(), model: z.string(), demo: z.boolean() }) } } },
    async () => {
      await deps.ping();
      return { status: 'ready' as const, storage: deps.storageKind, model: deps.model.label, demo: deps.model.demo };
    },
  );
  app.get('/api/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  const metrics = deps.metrics;
  if (metrics) {
    app.addHook('onResponse', async (request, reply) => {
      // The route pattern, never the raw URL: ids in paths would make labels grow without bound.
      const route = request.routeOptions.url ?? 'unmatched';
      metrics.httpRequest({ method: request.method, route, status: reply.statusCode, seconds: reply.elapsedTime / 1000 });
    });
  }
  const exposition = deps.metricsExposition;
  if (exposition) {
    app.get('/metrics', { schema: { tags: ['health'], summary: 'Prometheus metrics (protected like the API when auth is on)', hide: true } }, async (_request, reply) => {
      const { contentType, body } = await exposition();
      return reply.type(contentType).send(body);
    });
  }

  await app.register(agentRoutes(deps));
  await app.register(threadRoutes(deps));
  if (deps.autonomy) await app.register(autonomyRoutes(deps.autonomy));
  if (deps.hooks) await app.register(hookRoutes(deps.hooks));
  if (deps.plans) await app.register(planRoutes(deps.plans, deps));
  if (deps.schedules) await app.register(scheduleRoutes(deps.schedules));
  if (deps.approvals) await app.register(approvalRoutes(deps.approvals));
  if (deps.checkIns) await app.register(checkInRoutes(deps.checkIns, deps));
  if (deps.autonomyReports) await app.register(autonomyReportRoutes(deps.autonomyReports));
  if (deps.outboundWebhooks) await app.register(outboundWebhookRoutes(deps.outboundWebhooks));
  if (deps.telegramWebhook) await app.register(channelRoutes(deps.telegramWebhook));
  registerWebSocket(app, deps);
  return app;
}
