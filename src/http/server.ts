import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import fastifySwagger from '@fastify/swagger';
import fastifyWebsocket from '@fastify/websocket';
import fastifySwaggerUi from '@fastify/swagger-ui';
import { completeOpenApiDocument } from './openapi-document.js';
import { documentedStatuses, operationKey } from './openapi-operations.js';
import { jsonSchemaTransform, serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { HttpDependencies } from './http-dependencies.js';
import { errorHandler, errorPayload, notFoundHandler, toVigilError } from './errors.js';
import { refuseNul } from './nul-characters.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from './json-depth.js';
import { PATH_PARAM_MAX_LENGTH } from './schemas.js';
import { VigilError } from '../domain/errors.js';
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
import { threadEventRoutes } from './routes/thread-event-routes.js';
import { contextRoutes } from './routes/context-routes.js';
import { scheduleRoutes } from './routes/schedule-routes.js';
import { maxFrameBytes, registerWebSocket } from './websocket.js';
import { langgraphRoutes } from './langgraph/index.js';
import { corsHeaders, registerCors } from './cors.js';
import { packageInfo } from '../package-info.js';
import { isWebAppPath, registerWebApp } from './web-app.js';

const PUBLIC_PATHS = new Set(['/healthz', '/readyz', '/api/openapi.json', '/ok', '/info']);
/** The API reference is public, like the document it renders. */
const isPublicPath = (path: string) => PUBLIC_PATHS.has(path) || path === '/docs' || path.startsWith('/docs/');

/** The Fastify application: routes, zod schemas, auth, errors, WebSocket. Not listening yet. */
export async function buildHttpServer(deps: HttpDependencies): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    bodyLimit: deps.bodyLimit,
    // Fastify's default (100) is below the ids routes accept: a thread named with 120
    // characters could be created but never read or deleted again.
    routerOptions: { maxParamLength: PATH_PARAM_MAX_LENGTH },
    // The router's own refusals, before any route or hook (so before the token is checked:
    // they hold nothing but the refusal), in the envelope like every other error instead of
    // Fastify's body: a path parameter longer than any route takes (Fastify's 414, here the
    // 400 VALIDATION_FAILED a 129-character id gets from its schema) or broken
    // percent-encoding (FST_ERR_BAD_URL).
    frameworkErrors: (error, request, reply) => {
      void reply.headers({ 'x-request-id': request.id, 'x-content-type-options': 'nosniff', ...corsHeaders(deps.corsOrigins ?? [], request.headers.origin) });
      const refusal =
        error.code === 'FST_ERR_MAX_PARAM_LENGTH'
          ? new VigilError('VALIDATION_FAILED', `a path parameter is longer than ${PATH_PARAM_MAX_LENGTH} characters`, { cause: error })
          : error.code === 'FST_ERR_BAD_URL'
            ? new VigilError('VALIDATION_FAILED', 'the path is not valid percent-encoding', { cause: error })
            : error;
      errorHandler(refusal, request, reply);
    },
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.-]{1,128}$/.test(given) ? given : randomUUID();
    },
    logController: new LogController({ requestIdLogLabel: 'requestId' }),
    return503OnClosing: true,
  }).withTypeProvider<ZodTypeProvider>();

  // JSON only: a text/plain body is refused with 415 instead of reaching a schema as a string.
  app.removeContentTypeParser('text/plain');
  // Fastify's own JSON parsing (empty body, malformed JSON, __proto__ and constructor refused),
  // then the nesting bound, for every route at once: a body nested too deep is refused here,
  // before any handler has written part of it (json-depth.ts).
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    parseJson(request, body as string, (error, parsed) => {
      if (error) return done(error, undefined);
      if (nestsDeeperThan(parsed, MAX_JSON_DEPTH)) {
        return done(new VigilError('VALIDATION_FAILED', `the JSON body is nested more than ${MAX_JSON_DEPTH} levels deep (objects and arrays)`), undefined);
      }
      done(null, parsed);
    });
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.setErrorHandler(errorHandler);
  // With the web app, its handler answers page paths with index.html and the rest as before.
  const servesWebApp = deps.webApp !== false && (await registerWebApp(app));
  if (!servesWebApp) app.setNotFoundHandler(notFoundHandler);
  app.decorateRequest('userId', '');

  await app.register(fastifySwagger, {
    openapi: {
      info: { title: 'vigil', version: '0.1.0', description: 'A server for LLM agents that act on their own.' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    transform: jsonSchemaTransform,
    transformObject: (documentObject) => completeOpenApiDocument('openapiObject' in documentObject ? documentObject.openapiObject : documentObject.swaggerObject),
  });
  // The interactive reference, served from the package's own assets (no CDN).
  await app.register(fastifySwaggerUi, { routePrefix: '/docs', uiConfig: { deepLinking: true }, staticCSP: true });
  await app.register(fastifyWebsocket, {
    // A frame somewhat over the limit is read and refused with BODY_TOO_LARGE (the client
    // learns why); past twice the limit the socket closes (1009) before it is buffered whole.
    options: { maxPayload: 2 * maxFrameBytes(deps.bodyLimit) },
    // On a graceful stop, tell each client why its socket closes (1001: going away), so it
    // reconnects (to another instance, or to this one once it is back).
    preClose(done) {
      for (const client of this.websocketServer.clients) client.close(1001, 'the server is stopping');
      this.websocketServer.close();
      done();
    },
  });

  // Refused on both databases alike, before any handler writes or calls a model (nul-characters.ts).
  app.addHook('preValidation', async (request) => {
    refuseNul(request.params, request.query, request.body);
  });
  if (deps.corsOrigins && deps.corsOrigins.length > 0) registerCors(app, deps.corsOrigins);
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    // Every answer is what its content type says (no sniffing a JSON error into a page).
    reply.header('x-content-type-options', 'nosniff');
    // A CORS preflight carries no credentials; registerCors answers it.
    if (request.method === 'OPTIONS' && deps.corsOrigins && deps.corsOrigins.length > 0) return done();
    deps.withLogContext({ requestId: request.id }, () => {
      const path = request.url.split('?')[0] ?? '';
      if (isPublicPath(path) || request.routeOptions.config?.public === true) return done();
      // The web app's own files carry no data; it signs in against /api like any client.
      // A page path no route serves: the not-found handler answers the app's index.html (or a 404).
      if (servesWebApp && request.routeOptions.url === undefined && isWebAppPath(path)) return done();
      try {
        const token = new URLSearchParams(request.url.split('?')[1] ?? '').get('token') ?? undefined;
        // Browsers cannot set headers on a WebSocket: it may pass ?token= instead.
        // The LangGraph SDK sends its key as x-api-key: the same tokens, the same users.
        const apiKey = request.headers['x-api-key'];
        const authorization = request.headers.authorization ?? (typeof apiKey === 'string' && apiKey.length > 0 ? `Bearer ${apiKey}` : undefined);
        request.userId = deps.auth.authenticate(authorization, path === '/api/ws' ? token : undefined);
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
    {
      schema: {
        tags: ['health'],
        response: {
          200: z.object({
            status: z.literal('ready'),
            storage: z.string(),
            model: z.string(),
            demo: z.boolean(),
            instance: z.object({ id: z.string(), database: z.string(), queue: z.string(), roles: z.array(z.string()) }).optional(),
          }),
        },
      },
    },
    async () => {
      // Not ready is an answer, not a fault: 503 with its own code, so a probe or a person
      // tells "the database is gone" from a bug (it was 500 INTERNAL).
      await deps.ping().catch((error: unknown) => {
        throw new VigilError('DATABASE_UNAVAILABLE', 'not ready: the database does not answer', { cause: error });
      });
      return { status: 'ready' as const, storage: deps.storageKind, model: deps.model.label, demo: deps.model.demo, ...(deps.instance ? { instance: deps.instance() } : {}) };
    },
  );
  app.get('/api/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  const undocumented = deps.onUndocumentedResponse;
  if (undocumented) {
    // Strict mode (tests): a status the API document does not declare for the route is reported.
    app.addHook('onResponse', async (request, reply) => {
      const schema = request.routeOptions.schema as { hide?: boolean; body?: unknown; params?: unknown; querystring?: unknown; response?: Record<string, unknown> } | undefined;
      const url = request.routeOptions.url;
      if (!url || !schema || schema.hide || url.startsWith('/docs')) return;
      const key = operationKey(request.method, url);
      const declared = Object.keys(schema.response ?? {}).map(Number);
      const statuses = documentedStatuses({ key, declared, hasBody: schema.body !== undefined, hasParams: schema.params !== undefined, hasQuery: schema.querystring !== undefined });
      if (!statuses.includes(reply.statusCode)) undocumented({ operation: key, status: reply.statusCode, documented: statuses });
    });
  }
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
  await app.register(threadEventRoutes(deps));
  await app.register(contextRoutes(deps));
  if (deps.autonomy) await app.register(autonomyRoutes(deps.autonomy));
  if (deps.hooks) await app.register(hookRoutes(deps.hooks));
  if (deps.plans) await app.register(planRoutes(deps.plans, deps));
  if (deps.schedules) await app.register(scheduleRoutes(deps.schedules));
  if (deps.approvals) await app.register(approvalRoutes(deps.approvals));
  if (deps.checkIns) await app.register(checkInRoutes(deps.checkIns, deps));
  if (deps.autonomyReports) await app.register(autonomyReportRoutes(deps.autonomyReports));
  if (deps.outboundWebhooks) await app.register(outboundWebhookRoutes(deps.outboundWebhooks));
  if (deps.telegramWebhook) await app.register(channelRoutes(deps.telegramWebhook));
  if (deps.langgraph) await app.register(langgraphRoutes(deps, packageInfo().version));
  registerWebSocket(app, deps);
  return app;
}
