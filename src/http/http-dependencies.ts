import type { Logger } from 'pino';
import type { AgentService } from '../app/agent-service.js';
import type { ConversationService } from '../app/conversation-service.js';
import type { MemoryService } from '../app/memory-service.js';
import type { EventBus } from '../app/ports.js';
import type { Authenticator } from './auth.js';

/** What the HTTP layer is given by the composition root. */
export interface HttpDependencies {
  logger: Logger;
  bodyLimit: number;
  auth: Authenticator;
  agents: AgentService;
  conversations: ConversationService;
  memories: MemoryService;
  events: EventBus;
  /** Readiness: the database answers. */
  ping: () => Promise<void>;
  /** What model answers when an agent names none, for /readyz and clients. */
  model: { spec: string; label: string; demo: boolean };
  storageKind: 'sqlite' | 'postgres';
  /** Runs each request inside a log context, so app-layer log lines carry its id. */
  withLogContext: <T>(fields: Record<string, string>, work: () => T) => T;
}

declare module 'fastify' {
  interface FastifyRequest {
    userId: string;
  }
}
