import type { Logger } from 'pino';
import type { AgentService } from '../app/agent-service.js';
import type { ApprovalService } from '../app/approvals/approval-service.js';
import type { CheckInService } from '../app/check-ins/check-in-service.js';
import type { AutonomyReportService } from '../app/autonomy/autonomy-report-service.js';
import type { OutboundWebhookService } from '../app/outbound/outbound-webhook-service.js';
import type { AutonomyService } from '../app/autonomy/autonomy-service.js';
import type { ConversationService } from '../app/conversation-service.js';
import type { ThreadContextService } from '../app/context/thread-context-service.js';
import type { MemoryService } from '../app/memory-service.js';
import type { HookService } from '../app/webhooks/hook-service.js';
import type { PlanService } from '../app/plans/plan-service.js';
import type { ScheduleService } from '../app/schedules/schedule-service.js';
import type { EventBus, RunRecord } from '../app/ports.js';
import type { Metrics } from '../app/metrics.js';
import type { ProtocolStore } from '../app/langgraph/protocol-store.js';
import type { InstancePresence } from '../app/instance-presence.js';
import type { Authenticator } from './auth.js';
import type { TelegramWebhookReceiver } from './routes/channel-routes.js';

/** What the HTTP layer is given by the composition root. */
export interface HttpDependencies {
  logger: Logger;
  bodyLimit: number;
  auth: Authenticator;
  agents: AgentService;
  conversations: ConversationService;
  /** What a thread's next model call would receive (GET /api/threads/{id}/context). */
  threadContext: ThreadContextService;
  memories: MemoryService;
  events: EventBus;
  /** Readiness: the database answers. */
  ping: () => Promise<void>;
  /** What model answers when an agent names none, for /readyz and clients. */
  model: { spec: string; label: string; demo: boolean };
  storageKind: 'sqlite' | 'postgres';
  /** This instance among several on one database (/readyz): its id, where its data is, its queue, the singleton roles it holds. */
  instance?: () => InstanceStatus;
  /** Runs each request inside a log context, so app-layer log lines carry its id. */
  withLogContext: <T>(fields: Record<string, string>, work: () => T) => T;
  /** Idle follow-ups: policies and a thread's timers. */
  autonomy?: AutonomyService;
  /** Signed webhooks: management routes and the delivery route. */
  hooks?: HookService;
  /** Planner agents: plans, resume, tools and planner settings. */
  plans?: PlanService;
  /** Tool calls waiting for a person's decision. */
  approvals?: ApprovalService;
  /** Check-ins the agent set itself: the person lists and cancels them. */
  checkIns?: CheckInService;
  /** Per trigger type: is autonomy welcome? */
  autonomyReports?: AutonomyReportService;
  /** An agent's outbound webhooks. */
  outboundWebhooks?: OutboundWebhookService;
  /** Cron and one-shot schedules. */
  schedules?: ScheduleService;
  /** Serve the built web app at / (default: when web/dist exists). */
  webApp?: boolean;
  /** The Telegram channel in webhook mode: its update route exists only then. */
  telegramWebhook?: TelegramWebhookReceiver;
  /** Operators' metrics; `/metrics` is served when `exposition` is given (and not on a port of its own). */
  metrics?: Metrics;
  metricsExposition?: () => Promise<{ contentType: string; body: string }>;
  /** The LangGraph Platform API beside /api (src/http/langgraph); absent: not served. */
  langgraph?: {
    store: ProtocolStore;
    /** Which server processes still run (the owners of queued protocol runs). */
    presence: InstancePresence;
    /** Whether a run of any instance holds the thread's lock now (the run claimed by an owner taken for gone). */
    threadHeld: (threadId: string) => Promise<boolean>;
    /** The run in progress on a thread, of any trigger (the run coordinator's view). */
    activeRunOf: (threadId: string) => string | undefined;
    /** Ends a run its process left `running` (nothing holds its thread), as the periodic sweep would; true when it did. */
    endOrphanedRun?: (run: RunRecord) => Promise<boolean>;
    /** A graph kind's nodes and edges, as LangGraph draws them. */
    describeGraph?: (kind: string) => Promise<Record<string, unknown>>;
    heartbeatMs?: number;
    retentionMs?: number;
    resumeStartMs?: number;
  };
  /** Origins allowed to call the API from a browser (VIGIL_CORS_ORIGINS); none: no CORS headers. */
  corsOrigins?: readonly string[];
  /** Strict mode (tests): told of every response whose status the API document does not declare. */
  onUndocumentedResponse?: (violation: { operation: string; status: number; documented: number[] }) => void;
}

declare module 'fastify' {
  interface FastifyRequest {
    userId: string;
  }
  interface FastifyContextConfig {
    /** A route that authenticates itself (a signature, a channel's secret): no bearer token. */
    public?: boolean;
  }
}

export interface InstanceStatus {
  id: string;
  /** `sqlite` or `postgresql, schema <name>` (never the URL: it may hold a password). */
  database: string;
  /** The job queue: `embedded` or `pg-boss`. */
  queue: string;
  /** Singleton roles this instance holds now (e.g. `telegram-poller`). */
  roles: string[];
}
