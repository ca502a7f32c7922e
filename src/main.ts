import type { BaseCallbackHandler } from '@langchain/core/callbacks/base';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import { LOCAL_USER_ID } from './config.js';
import { buildChatGraph, RESPOND_NODE } from './agent/chat-graph.js';
import { wireDeletionCascade } from './app/deletion-cascade.js';
import { AgentService, demoDefaultAgent } from './app/agent-service.js';
import { ConversationService } from './app/conversation-service.js';
import { checkMetadataIntegrity } from './app/integrity-check.js';
import { MemoryService } from './app/memory-service.js';
import type { ChatModelResolver, Clock, Storage } from './app/ports.js';
import { RunCoordinator } from './app/run-coordinator.js';
import { InProcessEventBus } from './adapters/events/in-process-event-bus.js';
import { PostgresEventBus } from './adapters/events/postgres-event-bus.js';
import { PostgresRunCancellations } from './adapters/runs/postgres-run-cancellations.js';
import { PostgresListener } from './adapters/sql/postgres-listener.js';
import type { EventBus } from './app/ports.js';
import { randomUUID } from 'node:crypto';
import { InProcessSingletonRoles, type SingletonRoles } from './app/singleton-role.js';
import { PostgresSingletonRoles } from './adapters/locks/postgres-singleton-roles.js';
import { InProcessInstancePresence, type InstancePresence } from './app/instance-presence.js';
import { PostgresInstancePresence } from './adapters/locks/postgres-instance-presence.js';
import { createModelFactory, modelLabel } from './adapters/llm/model-factory.js';
import { createLogger, type LogContextRunner } from './adapters/logging/create-logger.js';
import { openStorage, SQLITE_FILE_NAME } from './adapters/storage-factory.js';
import { MIGRATIONS } from './adapters/sql/migrations/index.js';
import { readPostgresMigrations, readSqliteMigrations } from './adapters/sql/schema-version.js';
import { join } from 'node:path';
import { openJobQueue, openThreadLocks } from './adapters/jobs/job-queue-factory.js';
import { SqlTimerRepository } from './adapters/sql/timer-repository.js';
import { AutonomyService } from './app/autonomy/autonomy-service.js';
import type { JobQueue } from './app/job-queue.js';
import type { ThreadLockService } from './app/thread-lock.js';
import { Bot } from 'grammy';
import { HookService } from './app/webhooks/hook-service.js';
import { SecretBox } from './app/webhooks/hook-secret-box.js';
import { loadSecretKey } from './adapters/secrets/secret-key.js';
import { SqlHookRepository } from './adapters/sql/hook-repository.js';
import { SqlTelegramChatRepository } from './adapters/sql/telegram-chat-repository.js';
import { TelegramChannel } from './channels/telegram/telegram-channel.js';
import { Authenticator } from './http/auth.js';
import { buildHttpServer } from './http/server.js';
import { registerPlannerGraph } from './agent/planner/planner-graph.js';
import { Overlord } from './agent/planner/overlord.js';
import { McpClientPool } from './agent/tools/mcp-client-pool.js';
import { PlannerToolboxFactory } from './agent/tools/planner-toolbox.js';
import type { PlanHeartbeats } from './app/plans/plan-ports.js';
import { PlanService } from './app/plans/plan-service.js';
import { SqlPlanRepository } from './adapters/sql/plan-repository.js';
import { SqlScheduleRepository } from './adapters/sql/schedule-repository.js';
import { ScheduleRunner } from './app/schedules/schedule-runner.js';
import { PrometheusMetrics } from './adapters/metrics/prometheus-metrics.js';
import { measureCheckpointWrites, modelCallObservers, observeModels, serveMetrics, type MetricsServer } from './adapters/metrics/metrics-wiring.js';
import { autonomyDecisionOf } from './app/autonomy-decision-label.js';
import { RetentionJob } from './app/retention.js';
import { OrphanedRunSweeper } from './app/runs/orphaned-run-sweeper.js';
import { ModelInputLog } from './app/runs/model-input-log.js';
import { contextOfRun } from './app/runs/run-request.js';
import { startOtelTracing, type OtelTracing } from './adapters/tracing/otel-tracing.js';
import { OtelRunTracer } from './adapters/tracing/otel-run-tracer.js';
import { packageInfo } from './package-info.js';
import { SqlRetentionRepository } from './adapters/sql/retention-repository.js';
import { SCHEDULE_QUEUE, ScheduleService } from './app/schedules/schedule-service.js';
import { ContextWindow } from './agent/context/context-window.js';
import { threadContextReader } from './agent/context/context-inspector.js';
import { modelCallAdmission } from './app/context/model-call-admission.js';
import { ThreadContextService } from './app/context/thread-context-service.js';
import { ApprovalService } from './app/approvals/approval-service.js';
import type { ApprovalGate } from './app/approvals/approval-ports.js';
import { waitingStepReader } from './app/approvals/waiting-step.js';
import { SqlApprovalRepository } from './adapters/sql/approval-repository.js';
import { ChatToolboxSource } from './agent/tool-loop/chat-toolbox.js';
import { ToolLoop, toolLoopEndReason } from './agent/tool-loop/tool-loop.js';
import type { CheckInPort } from './agent/tool-loop/check-in-tools.js';
import { CheckInService } from './app/check-ins/check-in-service.js';
import { SqlCheckInRepository } from './adapters/sql/check-in-repository.js';
import { SqlAutonomyReportRepository } from './adapters/sql/autonomy-report-repository.js';
import { AutonomyReportService } from './app/autonomy/autonomy-report-service.js';
import { OutboundWebhookService } from './app/outbound/outbound-webhook-service.js';
import { SqlOutboundWebhookRepository } from './adapters/sql/outbound-webhook-repository.js';
import { SqlProtocolStore } from './adapters/sql/protocol-repository.js';

export interface StartOptions {
  /** Replace the model resolver (tests use fake chat models; never the network). */
  models?: ChatModelResolver;
  logger?: Logger;
  withLogContext?: LogContextRunner;
  clock?: Clock;
  /** Pace of the demo model's streaming; a person likes to see tokens arrive. */
  demoTokenDelayMs?: number;
  /** With the demo model, each user's default agent follows up after a short silence (`vigil serve` sets it). */
  demoAgent?: boolean;
  /** Test knobs: the embedded scheduler's claim lease, and model retries (count, first backoff). */
  autonomy?: { jobLeaseMs?: number; modelRetries?: number; retryBackoffMs?: number };
  /** Strict mode (tests): told of every response whose status the API document does not declare. */
  onUndocumentedResponse?: (violation: { operation: string; status: number; documented: number[] }) => void;
  /** Test knobs of outbound webhooks: the first retry's delay, failures in a row before disabling. */
  outboundWebhooks?: { retryBaseMs?: number; disableAfter?: number };
  /** Test knob: how often runs left `running` by a dead process are looked for (default: VIGIL_RUN_SWEEP_INTERVAL_MS). */
  orphanedRunSweepMs?: number;
  /** Test knob of the LangGraph protocol's streams: the silence before a heartbeat comment (default 15 s). */
  langgraph?: { heartbeatMs?: number; resumeStartMs?: number };
}

export interface RunningServer {
  app: FastifyInstance;
  storage: Storage;
  logger: Logger;
  /** The use cases, for in-process callers (tests, future entry points). */
  services: {
    conversations: ConversationService;
    agents: AgentService;
    memories: MemoryService;
    hooks: HookService;
    telegram: TelegramChannel | undefined;
    autonomy: AutonomyService;
    jobs: JobQueue;
    plans: PlanService;
    overlord: Overlord;
    schedules: ScheduleService;
    scheduleRunner: ScheduleRunner;
    retention: RetentionJob;
    orphanedRuns: OrphanedRunSweeper;
    approvals: ApprovalService;
    checkIns: CheckInService;
    /** Starts, cancels and recovers runs under their threads' locks. */
    coordinator: RunCoordinator;
    /** The thread event bus (what runs publish, what streams subscribe to). */
    events: EventBus;
  };
  /** The address it listens on, e.g. http://127.0.0.1:8787. */
  url: string;
  /** Stop accepting, let runs in flight end (cancelled), close the database. Idempotent. */
  close(): Promise<void>;
}

const systemClock: Clock = { now: () => new Date() };

/** The composition root: the only place that constructs adapters. */
export async function startServer(config: Config, options: StartOptions = {}): Promise<RunningServer> {
  const bundle = options.logger ? { logger: options.logger, withLogContext: options.withLogContext ?? ((_fields, work) => work()) } : createLogger(config.logLevel, undefined, { secrets: configuredSecrets(config) });
  const { logger } = bundle;
  const clock = options.clock ?? systemClock;
  const storage = await openStorage({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, postgresSchema: config.databaseSchema, logger });
  let app: FastifyInstance | undefined;
  let jobs: JobQueue | undefined;
  let locks: ThreadLockService | undefined;
  let metricsServer: MetricsServer | undefined;
  let tracing: OtelTracing | undefined;
  let listener: PostgresListener | undefined;
  let stopCancelListening: (() => void) | undefined;
  let openedEvents: EventBus | undefined;
  let roles: SingletonRoles | undefined;
  let presence: InstancePresence | undefined;
  const instanceId = config.instanceId ?? randomUUID().slice(0, 8);
  try {
    await checkMetadataIntegrity(storage.checkpointer, logger, (config) => storage.checkpointer.getTupleFromStorage(config));
    const metrics = new PrometheusMetrics({ queueDepth: () => jobs?.depth() ?? Promise.resolve({ ready: 0, deferred: 0, active: 0 }) });
    const models = options.models ? observeModels(options.models, metrics) : buildModels(config, options.demoTokenDelayMs ?? 0, modelCallObservers(metrics));
    models(config.model); // fail at start-up, not at the first message, on a bad model setting
    const demo = config.model === 'demo';
    if (demo) logger.warn({ model: modelLabel('demo') }, 'No model configured (VIGIL_MODEL): the offline DEMO model answers. Its replies are canned and labelled as demo.');
    else logger.info({ model: config.model }, 'model configured');

    // Several instances on one PostgreSQL database: one LISTEN connection per instance, shared
    // by the event bus and the thread-yield notices; events cross instances (I15).
    if (storage.kind === 'postgres' && config.databaseUrl) {
      listener = await PostgresListener.open(config.databaseUrl, logger, `vigil-listener ${instanceId}`);
      openedEvents = await PostgresEventBus.open({ db: storage.context.db, listener, schema: config.databaseSchema, logger });
    } else openedEvents = new InProcessEventBus(logger);
    const events = openedEvents;
    // Work one instance does at a time (Telegram long polling), chosen by an advisory lock on PostgreSQL.
    const singletonRoles: SingletonRoles =
      storage.kind === 'postgres' && config.databaseUrl ? new PostgresSingletonRoles({ connectionString: config.databaseUrl, schema: config.databaseSchema, logger, instanceId }) : new InProcessSingletonRoles();
    roles = singletonRoles;
    // Which processes still run: a LangGraph protocol run queued in one that died is ended, not left pending.
    const instancePresence: InstancePresence =
      storage.kind === 'postgres' && config.databaseUrl
        ? await PostgresInstancePresence.open({ connectionString: config.databaseUrl, schema: config.databaseSchema, logger, instanceId })
        : new InProcessInstancePresence();
    presence = instancePresence;
    events.observe((event) => {
      const decision = autonomyDecisionOf(event);
      if (decision) metrics.autonomyDecision(decision);
      if (event.type === 'timer.fire' && event.dueAt) metrics.timerLag((Date.parse(event.at) - Date.parse(event.dueAt)) / 1000);
    });
    const checkpointer = measureCheckpointWrites(storage.checkpointer, metrics);
    const timerRepository = new SqlTimerRepository(storage.context);
    // One context window for every graph (I14): the agents' budgets, and autonomy's budget for summary calls.
    const modelInputs = new ModelInputLog();
    const contextWindow = new ContextWindow({
      models,
      logger,
      clock,
      agents: storage.agents,
      serverMaxTokens: config.contextTokens,
      admitSummaryCall: modelCallAdmission({ agents: storage.agents, timers: timerRepository, clock, logger }, 'conversation summary'),
      onModelInput: (runId, record) => modelInputs.note(runId, record),
    });
    const mcp = new McpClientPool({ logger, allowedStdioCommands: config.mcpStdioCommands });
    const toolboxes = new PlannerToolboxFactory({ memories: storage.memories, clock, mcp });
    // Check-ins need the conversations (built below); the check-in tools reach them through this late-bound port.
    let checkIns: CheckInService | undefined;
    const checkInPort: CheckInPort = {
      schedule: (run, input) => required(checkIns, 'check-ins').schedule(run, input),
      list: (userId, threadId) => required(checkIns, 'check-ins').list(userId, threadId),
      cancel: (userId, threadId, id, by) => required(checkIns, 'check-ins').cancel(userId, threadId, id, by),
    };
    const chatTools = new ChatToolboxSource({ agents: storage.agents, toolboxes, checkIns: checkInPort });
    // The approval service needs the coordinator and the job queue (built below); the tool loop reaches it through this late-bound gate.
    let approvals: ApprovalService | undefined;
    const approvalGate: ApprovalGate = {
      requestStep: (input) => required(approvals, 'approvals').requestStep(input),
      beginExecution: (id) => required(approvals, 'approvals').beginExecution(id),
      finishExecution: (id, result, outcome) => required(approvals, 'approvals').finishExecution(id, result, outcome),
      reread: (id) => required(approvals, 'approvals').reread(id),
    };
    const toolLoop = new ToolLoop({ tools: chatTools, approvals: approvalGate, logger });
    const chatGraph = buildChatGraph({
      checkpointer,
      memories: storage.memories,
      models,
      logger,
      context: contextWindow,
      toolLoop,
      admitModelCall: modelCallAdmission({ agents: storage.agents, timers: timerRepository, clock, logger }, 'tool loop step'),
    });
    const planRepository = new SqlPlanRepository(storage.context);
    // The overlord needs the job queue (built below); the planner graph reaches it through this late-bound port.
    let overlord: Overlord | undefined;
    const heartbeats: PlanHeartbeats = { arm: async (input) => overlord?.arm(input), disarm: async (threadId) => overlord?.disarm(threadId) };
    const plannerGraph = registerPlannerGraph({ checkpointer, memories: storage.memories, agents: storage.agents, plans: planRepository, models, toolboxes, events, heartbeats, clock, logger, context: contextWindow, approvals: approvalGate });
    const graphs = { chat: { graph: chatGraph, replyNodes: new Set([RESPOND_NODE]), endReason: toolLoopEndReason }, planner: plannerGraph };
    const lockTarget = { storage, databaseUrl: config.databaseUrl, schema: config.databaseSchema, logger, listener };
    locks = await openThreadLocks(lockTarget);
    const threadLocks = locks;
    tracing = config.otelEndpoint ? startOtelTracing({ endpoint: config.otelEndpoint, serviceName: config.otelServiceName, serviceVersion: packageVersion() }) : undefined;
    const runTracer = tracing?.tracer;
    const coordinator = new RunCoordinator({
      ...(runTracer ? { runCallbacks: () => [new OtelRunTracer(runTracer)] } : {}),
      storage,
      graphs,
      events,
      clock,
      logger,
      defaultModel: config.model,
      modelLabel,
      locks,
      modelInputs,
      modelStallTimeoutMs: config.modelTimeoutMs,
      ...(options.autonomy?.modelRetries !== undefined ? { modelRetries: options.autonomy.modelRetries } : {}),
      ...(options.autonomy?.retryBackoffMs !== undefined ? { retryBackoffMs: options.autonomy.retryBackoffMs } : {}),
    });
    coordinator.onRunEnd(async ({ outcome }) => {
      const { run } = outcome;
      if (run.endedAt) metrics.runEnded({ trigger: run.trigger, status: run.status, seconds: (Date.parse(run.endedAt) - Date.parse(run.startedAt)) / 1000 });
    });
    const agents = new AgentService(storage, clock, options.demoAgent && config.model === 'demo' ? demoDefaultAgent() : undefined, (text) => contextWindow.counter.text(text));
    const conversations = new ConversationService(storage, agents, coordinator, clock, logger);
    if (listener) stopCancelListening = await conversations.cancelAcrossInstances(new PostgresRunCancellations({ db: storage.context.db, listener, schema: config.databaseSchema, logger }));
    const memories = new MemoryService(storage, agents, clock);
    const threadContext = new ThreadContextService(conversations, agents, threadContextReader(contextWindow, graphs, config.model, { models, toolLoop, memories: storage.memories }));
    const jobQueue = openJobQueue({ ...lockTarget, clock, jobLeaseMs: options.autonomy?.jobLeaseMs, withLogContext: bundle.withLogContext, timerConcurrency: config.timerConcurrency });
    jobs = jobQueue;
    const approvalService = new ApprovalService({
      repository: new SqlApprovalRepository(storage.context),
      storage,
      jobs: jobQueue,
      events,
      coordinator,
      clock,
      logger,
      validate: (run, tool, args) => chatTools.validate(run, tool, args),
      waitingStep: waitingStepReader(graphs, config.model),
    });
    approvals = approvalService;
    await approvalService.attach();
    // A person's message supersedes the calls waiting on the thread, on receipt (the model is told);
    // a step already decided is carried out before the message is answered.
    conversations.onUserMessage((thread) => approvalService.supersedeThread(thread.id, thread.userId));
    conversations.beforeUserRun((thread) => approvalService.resumeDecidedStep(thread.id));
    // While a thread waits for a decision, schedules and webhooks do not start runs on it (follow-ups and check-ins check it themselves).
    conversations.guardTriggeredRuns(async (threadId, trigger) =>
      trigger !== 'autonomy' && trigger !== 'check_in' && trigger !== 'channel' && (await approvalService.awaitingApproval(threadId)) ? 'awaiting_approval' : null,
    );
    const checkInService = new CheckInService({
      repository: new SqlCheckInRepository(storage.context),
      storage,
      timers: timerRepository,
      jobs: jobQueue,
      conversations,
      clock,
      logger,
      awaitingApproval: (threadId) => approvalService.awaitingApproval(threadId),
      coordinator,
    });
    checkIns = checkInService;
    await checkInService.attach();
    const autonomy = new AutonomyService({
      storage,
      timers: timerRepository,
      jobs: jobQueue,
      conversations,
      coordinator,
      events,
      clock,
      logger,
      models,
      defaultModel: config.model,
      awaitingApproval: (threadId) => approvalService.awaitingApproval(threadId),
    });
    await autonomy.attach();
    const plans = new PlanService({ storage, plans: planRepository, agents, coordinator, toolboxes, clock, logger, awaitingApproval: (threadId) => approvalService.awaitingApproval(threadId) });
    const planOverlord = new Overlord({
      jobs: jobQueue,
      plans: planRepository,
      threads: storage.threads,
      agents: storage.agents,
      runs: storage.runs,
      models,
      defaultModel: config.model,
      context: contextWindow,
      runHeartbeat: (plan, heartbeat) => plans.runHeartbeat(plan, heartbeat),
      // A thread waiting for a person's approval gets no heartbeat run either (checked later, no model call).
      isBusy: async (threadId) => plans.isBusy(threadId) || (await approvalService.hasPending(threadId)),
      clock,
      logger,
    });
    overlord = planOverlord;
    await planOverlord.start();
    // The key that seals hook secrets is loaded (or its file created) on first use only.
    let secretBox: Promise<SecretBox> | undefined;
    const secrets = () =>
      (secretBox ??= loadSecretKey({ configured: config.secretsKey, dataDir: config.dataDir, logger }).then(
        (key) => new SecretBox(key),
        (error: unknown) => {
          secretBox = undefined; // a later delivery may try again
          throw error;
        },
      ));
    if (config.databaseUrl && config.secretsKey === undefined) {
      logger.warn('VIGIL_SECRETS_KEY is not set: webhook secrets are sealed with a key file under VIGIL_DATA_DIR; instances sharing this database must share one key');
    }
    const scheduleRepository = new SqlScheduleRepository(storage.context);
    const schedules = new ScheduleService(scheduleRepository, jobQueue, agents, conversations, clock, logger);
    const retention = new RetentionJob({ store: new SqlRetentionRepository(storage.context), clock, logger, retentionDays: config.retentionDays });
    const orphanedRuns = new OrphanedRunSweeper(
      {
        runs: storage.runs,
        locks,
        events,
        clock,
        logger,
        messagesOfRun: (run) => storage.threads.messagesOfRun(run.userId, run.threadId, run.id),
      },
      { intervalMs: options.orphanedRunSweepMs ?? config.runSweepIntervalMs },
    );
    const scheduleRunner = new ScheduleRunner({
      schedules: scheduleRepository,
      service: schedules,
      conversations,
      runs: storage.runs,
      endOrphanedRun: (run) => orphanedRuns.endIfOrphaned(run),
      clock,
      logger,
      missedGraceMs: config.scheduleMissedGraceMs,
    });
    await jobQueue.work(SCHEDULE_QUEUE, (job) => scheduleRunner.fire(job));
    const outboundWebhooks = new OutboundWebhookService(
      { repository: new SqlOutboundWebhookRepository(storage.context), agents, jobs: jobQueue, secrets, approval: (id) => approvalService.reread(id), clock, logger },
      { allowPrivateAddresses: config.outboundWebhooksAllowPrivate, ...options.outboundWebhooks },
    );
    await outboundWebhooks.attach();
    coordinator.onRunEnd((event) => outboundWebhooks.onRunEnd(event));
    orphanedRuns.onEnded((run, messages) => outboundWebhooks.runEnded(run, messages));
    events.observe((event) => void outboundWebhooks.onEvent(event).catch((error: unknown) => logger.error({ err: error, type: event.type }, 'outbound webhook could not be queued')));
    const hooks = new HookService({ store: new SqlHookRepository(storage.context), conversations, agents, secrets, clock, logger });
    wireDeletionCascade({ agents, conversations, schedules, hooks, events });
    const telegramConfig = config.telegram;
    const telegram = telegramConfig
      ? new TelegramChannel(
          {
            bot: new Bot(telegramConfig.botToken, { client: { apiRoot: telegramConfig.apiRoot } }),
            store: new SqlTelegramChatRepository(storage.context),
            storage,
            conversations,
            agents,
            events,
            clock,
            logger,
            approvals: approvalService,
            roles: singletonRoles,
          },
          {
            mode: telegramConfig.mode,
            userId: telegramConfig.userId,
            agentId: telegramConfig.agentId,
            webhookSecret: telegramConfig.webhookSecret,
            webhookUrl: telegramConfig.webhookUrl,
            allowedChats: telegramConfig.allowedChats,
          },
        )
      : undefined;

    const protocolStore = new SqlProtocolStore(storage.context);
    app = await buildHttpServer({
      logger,
      bodyLimit: config.bodyLimit,
      auth: new Authenticator(config.authTokens, LOCAL_USER_ID),
      agents,
      conversations,
      threadContext,
      memories,
      events,
      ping: () => storage.ping(),
      model: { spec: config.model, label: modelLabel(config.model), demo },
      storageKind: storage.kind,
      instance: () => ({
        id: instanceId,
        database: storage.kind === 'postgres' ? `postgresql, schema ${config.databaseSchema}` : 'sqlite',
        queue: storage.kind === 'postgres' ? 'pg-boss; due timers on the job table' : 'embedded',
        roles: singletonRoles.held(),
      }),
      withLogContext: bundle.withLogContext,
      autonomy,
      hooks,
      plans,
      schedules,
      approvals: approvalService,
      checkIns: checkInService,
      outboundWebhooks,
      autonomyReports: new AutonomyReportService(new SqlAutonomyReportRepository(storage.context), agents),
      langgraph: {
        store: protocolStore,
        presence: instancePresence,
        threadHeld: async (threadId) => {
          const lease = await threadLocks.tryAcquire(threadId);
          await lease?.release();
          return lease === undefined;
        },
        activeRunOf: (threadId) => coordinator.activeRunOf(threadId),
        endOrphanedRun: (run) => orphanedRuns.endIfOrphaned(run),
        ...(options.langgraph?.heartbeatMs !== undefined ? { heartbeatMs: options.langgraph.heartbeatMs } : {}),
        ...(options.langgraph?.resumeStartMs !== undefined ? { resumeStartMs: options.langgraph.resumeStartMs } : {}),
        describeGraph: async (kind) => {
          const registered = graphs[kind as keyof typeof graphs];
          if (!registered) throw new Error(`no graph of kind "${kind}"`);
          // The compiled LangGraph graphs draw themselves; the port type does not promise it.
          const drawable = registered.graph as unknown as { getGraphAsync?: () => Promise<{ toJSON(): unknown }> };
          if (!drawable.getGraphAsync) throw new Error(`the ${kind} graph cannot describe itself`);
          return (await drawable.getGraphAsync()).toJSON() as Record<string, unknown>;
        },
      },
      corsOrigins: config.corsOrigins,
      metrics,
      ...(options.onUndocumentedResponse ? { onUndocumentedResponse: options.onUndocumentedResponse } : {}),
      ...(config.metricsPort === undefined ? { metricsExposition: () => metrics.exposition() } : {}),
      ...(telegram && telegramConfig?.mode === 'webhook' && telegramConfig.webhookSecret
        ? { telegramWebhook: { secret: telegramConfig.webhookSecret, receive: (update: unknown) => telegram.receiveWebhookUpdate(update) } }
        : {}),
    });
    const address = await app.listen({ host: config.host, port: config.port });
    if (config.metricsPort !== undefined) {
      metricsServer = await serveMetrics(metrics, config.host, config.metricsPort);
      logger.info({ address: metricsServer.url }, 'metrics on a port of their own');
    }
    // Timers (and schedule fires) that came due while no server ran are delivered now.
    await schedules.recover();
    await jobQueue.start();
    await autonomy.start(); // its safety sweep: timers whose job went missing
    await approvalService.recover(); // pending approvals keep their deadlines across restarts
    void telegram?.start().catch(() => undefined); // in the background; it logs its own failure
    retention.start();
    orphanedRuns.start(); // a first pass at once: runs a killed process left `running`
    logger.info({ address, instance: instanceId, storage: storage.kind, auth: config.authTokens.size > 0 ? 'bearer tokens' : `single local user "${LOCAL_USER_ID}"` }, 'vigil is listening');

    let closing: Promise<void> | undefined;
    const running = app;
    const lockService = locks;
    const eventBus = events;
    return {
      app: running,
      storage,
      logger,
      services: { conversations, agents, memories, hooks, telegram, autonomy, jobs: jobQueue, plans, overlord: planOverlord, schedules, scheduleRunner, retention, orphanedRuns, approvals: approvalService, checkIns: checkInService, coordinator, events },
      url: address,
      close: () =>
        (closing ??= (async () => {
          logger.info({ graceMs: config.shutdownTimeoutMs }, 'stopping');
          // Stop accepting first: new requests get 503, the listening socket closes; the
          // close completes once open streams (which end with their runs) are done.
          const httpClosed = running.close();
          await telegram?.stopReceiving();
          autonomy.stop();
          await retention.stop();
          await orphanedRuns.stop();
          // Runs in flight get the grace period to finish, then are cancelled (run.end says
          // why, which ends their streams); the job queue stops taking jobs and waits for its
          // handlers, so a timer it had not started stays pending for the next start.
          await Promise.all([coordinator.drain(config.shutdownTimeoutMs), jobQueue.stop()]);
          await mcp.close();
          await Promise.all([hooks.drain(), telegram?.stop()]);
          await singletonRoles.close();
          await instancePresence.close();
          await httpClosed;
          await metricsServer?.close();
          await tracing?.shutdown().catch((error: unknown) => logger.warn({ err: error }, 'could not export the last traces'));
          await lockService.close();
          await eventBus.close?.();
          stopCancelListening?.();
          await listener?.close();
          await storage.close();
          logger.info('stopped');
        })()),
    };
  } catch (error) {
    await app?.close().catch(() => undefined);
    await metricsServer?.close().catch(() => undefined);
    await jobs?.stop().catch(() => undefined);
    await locks?.close().catch(() => undefined);
    await openedEvents?.close?.().catch(() => undefined);
    await roles?.close().catch(() => undefined);
    await presence?.close().catch(() => undefined);
    await listener?.close().catch(() => undefined);
    await storage.close().catch(() => undefined);
    throw error;
  }
}

function required<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`${what} used before the server finished starting`);
  return value;
}

/** Every secret the settings hold: no log line may carry one (see createLogger). */
function configuredSecrets(config: Config): string[] {
  const candidates = [config.openaiApiKey, config.anthropicApiKey, config.secretsKey, config.telegram?.botToken, config.telegram?.webhookSecret, ...config.authTokens.keys()];
  return candidates.filter((secret): secret is string => secret !== undefined);
}

/** The model resolver for these settings (the server, and `vigil doctor`'s test call). */
export function buildModels(config: Config, demoTokenDelayMs = 0, callbacks?: (spec: string) => BaseCallbackHandler[]): ChatModelResolver {
  return createModelFactory({
    ...(callbacks ? { callbacks } : {}),
    openaiApiKey: config.openaiApiKey,
    openaiBaseUrl: config.openaiBaseUrl,
    anthropicApiKey: config.anthropicApiKey,
    timeoutMs: config.modelTimeoutMs,
    demoTokenDelayMs,
  });
}

export interface DatabaseStatus {
  kind: Storage['kind'];
  /** Where: the SQLite file, or the PostgreSQL schema (never the URL: it may hold a password). */
  location: string;
  /** Applied migrations, oldest first. */
  migrations: { version: number; name: string; appliedAt: string }[];
  /** Migrations this build knows. */
  known: number;
}

/**
 * Open the configured database, bring its schema up to date (as the server does at
 * start), report its migrations, and close it: `vigil migrate` and `vigil doctor`.
 */
export async function migrateDatabase(config: Config, logger: Logger): Promise<DatabaseStatus> {
  const storage = await openStorage({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, postgresSchema: config.databaseSchema, logger });
  try {
    const rows = await storage.context.db.selectFrom('vigil_migrations').select(['version', 'name', 'applied_at']).orderBy('version').execute();
    return {
      kind: storage.kind,
      location: storage.kind === 'sqlite' ? join(config.dataDir, SQLITE_FILE_NAME) : `schema ${config.databaseSchema}`,
      migrations: rows.map((row) => ({ version: Number(row.version), name: row.name, appliedAt: String(row.applied_at) })),
      known: MIGRATIONS.length,
    };
  } finally {
    await storage.close();
  }
}

/**
 * The configured database's schema version, read only: `vigil doctor` reports what is
 * there, and never creates the database or migrates it (which it did, and then reported
 * every database as up to date; its "run vigil migrate" could never show).
 */
export async function inspectDatabase(config: Config): Promise<DatabaseStatus> {
  if (config.databaseUrl) {
    return { kind: 'postgres', location: `schema ${config.databaseSchema}`, migrations: await readPostgresMigrations(config.databaseUrl, config.databaseSchema), known: MIGRATIONS.length };
  }
  const file = join(config.dataDir, SQLITE_FILE_NAME);
  return { kind: 'sqlite', location: file, migrations: readSqliteMigrations(file), known: MIGRATIONS.length };
}

function packageVersion(): string {
  return packageInfo().version;
}
