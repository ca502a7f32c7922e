import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { HttpDependencies } from '../http-dependencies.js';
import { assistantRoutes } from './assistant-routes.js';
import { protocolRunRoutes } from './run-routes.js';
import { ProtocolRunManager } from './run-manager.js';
import { protocolThreadRoutes } from './thread-routes.js';
import { storeRoutes } from './store-routes.js';
import { cronRoutes } from './cron-routes.js';
import { interruptsOf, visibleMessages, type ProtocolContext } from './protocol-threads.js';

/**
 * The LangGraph Platform API (Agent Protocol) beside /api: the official
 * `@langchain/langgraph-sdk` client, Agent Chat UI and `useStream` work against vigil.
 * Same services, storage, authorisation (I12) and autonomy as /api — not a second engine.
 */
export function langgraphRoutes(deps: HttpDependencies, version: string): FastifyPluginAsyncZod {
  const options = deps.langgraph!;
  let runs!: ProtocolRunManager;
  const context: ProtocolContext = { deps, store: options.store, busyThreads: () => runs.busyThreads() };
  runs = new ProtocolRunManager({
    conversations: deps.conversations,
    events: deps.events,
    store: options.store,
    presence: options.presence,
    threadHeld: options.threadHeld,
    logger: deps.logger,
    visibleMessages: (userId, threadId) => visibleMessages(context, userId, threadId),
    interrupts: (userId, threadId) => interruptsOf(context, userId, threadId),
    ...(options.resumeStartMs !== undefined ? { resumeStartMs: options.resumeStartMs } : {}),
    retentionMs: options.retentionMs ?? 10 * 60_000,
    activeRunOf: options.activeRunOf,
    ...(deps.approvals ? { continuationOf: deps.approvals.continuationOf.bind(deps.approvals) } : {}),
  });
  return async (app) => {
    app.addHook('onClose', async () => runs.close());
    app.get('/ok', { schema: { tags: ['langgraph'], response: { 200: z.object({ ok: z.literal(true) }) } } }, async () => ({ ok: true as const }));
    app.get(
      '/info',
      { schema: { tags: ['langgraph'], response: { 200: z.object({ version: z.string(), flags: z.record(z.string(), z.boolean()), host: z.record(z.string(), z.unknown()) }) } } },
      async () => ({
        version,
        flags: { assistants: true, crons: deps.schedules !== undefined, store: true, langsmith: false, langsmith_tracing_replicas: false },
        host: { kind: 'vigil', project_id: null, revision_id: null, tenant_id: null },
      }),
    );
    await app.register(assistantRoutes(context));
    await app.register(protocolThreadRoutes(context));
    await app.register(protocolRunRoutes(context, runs, options.heartbeatMs ?? 15_000));
    await app.register(storeRoutes(context));
    if (deps.schedules) await app.register(cronRoutes(context, deps.schedules));
  };
}
