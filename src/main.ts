import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import { LOCAL_USER_ID } from './config.js';
import { buildChatGraph, RESPOND_NODE } from './agent/chat-graph.js';
import { AgentService } from './app/agent-service.js';
import { ConversationService } from './app/conversation-service.js';
import { checkMetadataIntegrity } from './app/integrity-check.js';
import { MemoryService } from './app/memory-service.js';
import type { ChatModelResolver, Clock, Storage } from './app/ports.js';
import { RunCoordinator } from './app/run-coordinator.js';
import { InProcessEventBus } from './adapters/events/in-process-event-bus.js';
import { createModelFactory, modelLabel } from './adapters/llm/model-factory.js';
import { createLogger, type LogContextRunner } from './adapters/logging/create-logger.js';
import { openStorage } from './adapters/storage-factory.js';
import { Authenticator } from './http/auth.js';
import { buildHttpServer } from './http/server.js';

export interface StartOptions {
  /** Replace the model resolver (tests use fake chat models; never the network). */
  models?: ChatModelResolver;
  logger?: Logger;
  withLogContext?: LogContextRunner;
  clock?: Clock;
  /** Pace of the demo model's streaming; a person likes to see tokens arrive. */
  demoTokenDelayMs?: number;
}

export interface RunningServer {
  app: FastifyInstance;
  storage: Storage;
  logger: Logger;
  /** The use cases, for in-process callers (tests, future entry points). */
  services: { conversations: ConversationService; agents: AgentService; memories: MemoryService };
  /** The address it listens on, e.g. http://127.0.0.1:8787. */
  url: string;
  /** Stop accepting, let runs in flight end (cancelled), close the database. Idempotent. */
  close(): Promise<void>;
}

const systemClock: Clock = { now: () => new Date() };

/** The composition root: the only place that constructs adapters. */
export async function startServer(config: Config, options: StartOptions = {}): Promise<RunningServer> {
  const bundle = options.logger ? { logger: options.logger, withLogContext: options.withLogContext ?? ((_fields, work) => work()) } : createLogger(config.logLevel);
  const { logger } = bundle;
  const clock = options.clock ?? systemClock;
  const storage = await openStorage({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, postgresSchema: config.databaseSchema, logger });
  let app: FastifyInstance | undefined;
  try {
    await checkMetadataIntegrity(storage.checkpointer, logger);
    const models =
      options.models ??
      createModelFactory({
        openaiApiKey: config.openaiApiKey,
        openaiBaseUrl: config.openaiBaseUrl,
        anthropicApiKey: config.anthropicApiKey,
        timeoutMs: config.modelTimeoutMs,
        demoTokenDelayMs: options.demoTokenDelayMs ?? 0,
      });
    models(config.model); // fail at start-up, not at the first message, on a bad model setting
    const demo = config.model === 'demo';
    if (demo) logger.warn({ model: modelLabel('demo') }, 'No model configured (VIGIL_MODEL): the offline DEMO model answers. Its replies are canned and labelled as demo.');
    else logger.info({ model: config.model }, 'model configured');

    const events = new InProcessEventBus(logger);
    const chatGraph = buildChatGraph({ checkpointer: storage.checkpointer, memories: storage.memories, models, logger });
    const graphs = { chat: { graph: chatGraph, replyNodes: new Set([RESPOND_NODE]) } };
    const coordinator = new RunCoordinator({ storage, graphs, events, clock, logger, defaultModel: config.model, modelLabel });
    const agents = new AgentService(storage, clock);
    const conversations = new ConversationService(storage, agents, coordinator, clock, logger);
    const memories = new MemoryService(storage, agents, clock);

    app = await buildHttpServer({
      logger,
      bodyLimit: config.bodyLimit,
      auth: new Authenticator(config.authTokens, LOCAL_USER_ID),
      agents,
      conversations,
      memories,
      events,
      ping: () => storage.ping(),
      model: { spec: config.model, label: modelLabel(config.model), demo },
      storageKind: storage.kind,
      withLogContext: bundle.withLogContext,
    });
    const address = await app.listen({ host: config.host, port: config.port });
    logger.info({ address, storage: storage.kind, auth: config.authTokens.size > 0 ? 'bearer tokens' : `single local user "${LOCAL_USER_ID}"` }, 'vigil is listening');

    let closing: Promise<void> | undefined;
    const running = app;
    return {
      app: running,
      storage,
      logger,
      services: { conversations, agents, memories },
      url: address,
      close: () =>
        (closing ??= (async () => {
          logger.info('stopping');
          await coordinator.drain();
          await running.close();
          await storage.close();
          logger.info('stopped');
        })()),
    };
  } catch (error) {
    await app?.close().catch(() => undefined);
    await storage.close().catch(() => undefined);
    throw error;
  }
}
