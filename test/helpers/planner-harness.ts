import { randomUUID } from 'node:crypto';
import { HumanMessage } from '@langchain/core/messages';
import { InProcessEventBus } from '../../src/adapters/events/in-process-event-bus.js';
import { SqlPlanRepository } from '../../src/adapters/sql/plan-repository.js';
import type { SqlStorage } from '../../src/adapters/sql/sql-storage.js';
import { openPostgresStorage, openSqliteStorage } from '../../src/adapters/storage-factory.js';
import { NODES, registerPlannerGraph, type PlannerGraph } from '../../src/agent/planner/planner-graph.js';
import { McpClientPool, type McpPoolOptions } from '../../src/agent/tools/mcp-client-pool.js';
import { PlannerToolboxFactory } from '../../src/agent/tools/planner-toolbox.js';
import { AgentService } from '../../src/app/agent-service.js';
import type { PlanHeartbeats } from '../../src/app/plans/plan-ports.js';
import { PlanService } from '../../src/app/plans/plan-service.js';
import type { AgentRecord, Clock, EventBus, ThreadRecord } from '../../src/app/ports.js';
import { RunCoordinator, type RunOutcome } from '../../src/app/run-coordinator.js';
import type { VigilEvent } from '../../src/domain/events.js';
import { nodeOf } from '../../src/domain/planner/loop-bounds.js';
import type { PlannerMetadata } from '../../src/domain/planner/planner-state.js';
import type { RunContext } from '../../src/domain/run-context.js';
import { captureLogs } from './log-capture.js';
import { dropSchema, randomSchemaName } from './postgres.js';
import type { ScriptedChatModel } from './scripted-model.js';
import { makeTempDir, removeTempDir } from './temp-dir.js';
import type { Backend } from './test-server.js';

export const USER = 'alice';

/** Every event, in order, whatever its thread. */
export class RecordingEventBus implements EventBus {
  readonly events: VigilEvent[] = [];
  private readonly inner: InProcessEventBus;
  constructor(logger: ConstructorParameters<typeof InProcessEventBus>[0]) {
    this.inner = new InProcessEventBus(logger);
  }
  publish(event: VigilEvent): void {
    this.events.push(event);
    this.inner.publish(event);
  }
  subscribe(threadId: string, handler: (event: VigilEvent) => void): () => void {
    return this.inner.subscribe(threadId, handler);
  }
  observe(handler: (event: VigilEvent) => void): () => void {
    return this.inner.observe(handler);
  }
  forgetThread(threadId: string): Promise<void> {
    return this.inner.forgetThread(threadId);
  }
  ofRun(runId: string): VigilEvent[] {
    return this.events.filter((event) => 'runId' in event && event.runId === runId);
  }
}

/** Heartbeat arm/disarm calls, recorded (the overlord has its own tests). */
export class RecordedHeartbeats implements PlanHeartbeats {
  readonly armed: Array<{ threadId: string; planId: string; delayMs: number }> = [];
  readonly disarmed: string[] = [];
  async arm(input: { threadId: string; planId: string; delayMs: number }): Promise<void> {
    this.armed.push({ threadId: input.threadId, planId: input.planId, delayMs: input.delayMs });
  }
  async disarm(threadId: string): Promise<void> {
    this.disarmed.push(threadId);
  }
}

interface Place {
  file: string;
  schema: string;
  directory: string;
}

export interface PlannerHarness {
  storage: SqlStorage;
  plans: SqlPlanRepository;
  service: PlanService;
  coordinator: RunCoordinator;
  graph: PlannerGraph;
  events: RecordingEventBus;
  heartbeats: RecordedHeartbeats;
  logs: ReturnType<typeof captureLogs>['lines'];
  place: Place;
  /** A planner agent with these planner settings (a fresh id each time). */
  agent(settings?: Record<string, unknown>): Promise<AgentRecord>;
  thread(agent: AgentRecord): Promise<ThreadRecord>;
  /** A person's message to the thread, through the run coordinator: the whole run, run.end included. */
  say(thread: ThreadRecord, text: string): Promise<RunOutcome>;
  /** A synthetic input (resume requests and the like). */
  send(thread: ThreadRecord, input: HumanMessage, trigger?: RunContext['trigger']): Promise<RunOutcome>;
  state(threadId: string): Promise<{ planner: PlannerMetadata; messages: Array<{ getType(): string }> }>;
  /** The node names a run went through, START and END included: its edges are consecutive pairs. */
  path(threadId: string): Promise<string[]>;
  close(): Promise<void>;
  /** Close and remove the database. */
  destroy(): Promise<void>;
}

/** A planner graph on a real database, driven by the real run coordinator, with a scripted model. */
export async function openPlannerHarness(
  backend: Backend,
  options: { model: () => ScriptedChatModel; place?: Place; mcpStdioCommands?: string[]; mcp?: Pick<McpPoolOptions, 'connectTimeoutMs' | 'failureMemoryMs'>; heartbeats?: PlanHeartbeats; clock?: Clock },
): Promise<PlannerHarness> {
  const place = options.place ?? (await newPlace());
  const capture = captureLogs('debug');
  const logger = capture.logger;
  const storage =
    backend.kind === 'sqlite'
      ? await openSqliteStorage({ file: place.file, logger })
      : await openPostgresStorage({ connectionString: backend.url, schema: place.schema, logger });
  const clock = options.clock ?? { now: () => new Date() };
  const plans = new SqlPlanRepository(storage.context);
  const events = new RecordingEventBus(logger);
  const recorded = new RecordedHeartbeats();
  const mcp = new McpClientPool({ logger, allowedStdioCommands: options.mcpStdioCommands ?? [], ...options.mcp });
  const toolboxes = new PlannerToolboxFactory({ memories: storage.memories, clock, mcp });
  const registered = registerPlannerGraph({
    checkpointer: storage.checkpointer,
    memories: storage.memories,
    agents: storage.agents,
    plans,
    models: () => options.model(),
    toolboxes,
    events,
    heartbeats: options.heartbeats ?? recorded,
    clock,
    logger,
  });
  const coordinator = new RunCoordinator({ storage, graphs: { planner: registered }, events, clock, logger, defaultModel: 'scripted', modelLabel: (spec) => spec, modelRetries: 0 });
  const agents = new AgentService(storage, clock);
  const service = new PlanService({ storage, plans, agents, coordinator, toolboxes, clock, logger });

  const runContext = (thread: ThreadRecord, trigger: RunContext['trigger'], meta: Record<string, unknown> = {}): RunContext => ({
    runId: randomUUID(),
    threadId: thread.id,
    userId: thread.userId,
    agentId: thread.agentId,
    trigger,
    meta,
    requestedAt: clock.now().toISOString(),
    correlationId: randomUUID(),
  });
  const agentOf = async (thread: ThreadRecord) => (await storage.agents.get(thread.userId, thread.agentId))!;

  const harness: PlannerHarness = {
    storage,
    plans,
    service,
    coordinator,
    graph: registered.compiled,
    events,
    heartbeats: recorded,
    logs: capture.lines,
    place,
    agent: async (settings = {}) =>
      storage.agents.create(
        { id: `planner-${randomUUID().slice(0, 8)}`, userId: USER, name: 'Planner', kind: 'planner', systemPrompt: 'You plan carefully.', model: 'scripted', settings: { planner: settings } },
        clock.now().toISOString(),
      ),
    thread: async (agent) => storage.threads.create({ id: randomUUID(), userId: agent.userId, agentId: agent.id, title: null }, clock.now().toISOString()),
    say: async (thread, text) => coordinator.run({ context: runContext(thread, 'user'), agent: await agentOf(thread), input: new HumanMessage({ id: randomUUID(), content: text }) }),
    send: async (thread, input, trigger = 'user') => coordinator.run({ context: runContext(thread, trigger), agent: await agentOf(thread), input }),
    state: async (threadId) => {
      const snapshot = await registered.compiled.getState({ configurable: { thread_id: threadId } });
      return snapshot.values as { planner: PlannerMetadata; messages: Array<{ getType(): string }> };
    },
    path: async (threadId) => {
      const { planner } = await harness.state(threadId);
      return ['__start__', ...planner.visited.map(nodeOf), NODES.complete, '__end__'];
    },
    close: async () => {
      await mcp.close();
      await storage.close();
    },
    destroy: async () => {
      await harness.close();
      await removeTempDir(place.directory);
      if (backend.kind === 'postgres') await dropSchema(place.schema, backend.url);
    },
  };
  return harness;
}

async function newPlace(): Promise<Place> {
  const directory = await makeTempDir('vigil-planner-');
  return { directory, file: `${directory}/vigil.sqlite`, schema: randomSchemaName('vigil_planner') };
}

/** Consecutive pairs of a path, as "a->b". */
export function edgesOf(path: readonly string[]): string[] {
  return path.slice(1).map((node, index) => `${path[index]}->${node}`);
}
