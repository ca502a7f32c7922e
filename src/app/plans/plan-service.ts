import { randomUUID } from 'node:crypto';
import { HumanMessage } from '@langchain/core/messages';
import type { Logger } from 'pino';
import { VigilError } from '../../domain/errors.js';
import { plannerSettingsInputSchema, plannerSettingsOf, type PlannerSettings } from '../../domain/planner/planner-settings.js';
import { plannerSettingsWithTools } from '../../domain/tools/tool-settings.js';
import type { HeartbeatContext } from '../../domain/planner/planner-state.js';
import type { RunContext } from '../../domain/run-context.js';
import type { ToolDescriptor, ToolboxFactory } from '../../agent/tools/planner-toolbox.js';
import type { AgentService } from '../agent-service.js';
import type { Clock, Storage } from '../ports.js';
import type { RunCoordinator, RunDeclined, RunOutcome } from '../run-coordinator.js';
import type { PlanRecord, PlanRepository, ToolCallRecord } from './plan-ports.js';

export const OPEN_PLAN_STATUSES: ReadonlySet<PlanRecord['status']> = new Set(['planning', 'active', 'stopped']);

/** How many tool calls a plan's detail shows at most, the latest first (a page of them). */
export const PLAN_TOOL_CALL_PAGE = 500;

export interface PlanDetail {
  plan: PlanRecord;
  /** Its latest tool calls (or those before the cursor asked for), oldest first. */
  toolCalls: ToolCallRecord[];
  /** Cursor for the older ones, or null when these reach back to its first. */
  toolCallsNextCursor: string | null;
}

/** Plans as people see and drive them: list, inspect, resume; and the planner's tools and settings. */
export class PlanService {
  constructor(
    private readonly deps: {
      storage: Storage;
      plans: PlanRepository;
      agents: AgentService;
      coordinator: RunCoordinator;
      toolboxes: ToolboxFactory;
      clock: Clock;
      logger: Logger;
      /** Whether a step on the thread waits for a person's decision on a tool call (the approvals). */
      awaitingApproval?: (threadId: string) => Promise<boolean>;
    },
  ) {}

  /** The thread's plans, newest first; THREAD_NOT_FOUND for another user's thread (I12). */
  async listByThread(userId: string, threadId: string, limit: number): Promise<PlanRecord[]> {
    if (!(await this.deps.storage.threads.get(userId, threadId))) throw new VigilError('THREAD_NOT_FOUND', `no thread "${threadId}"`);
    return this.deps.plans.listByThread(userId, threadId, { limit });
  }

  /** The owner's plan; PLAN_NOT_FOUND for anyone else's (I12). */
  async get(userId: string, planId: string): Promise<PlanRecord> {
    const plan = await this.deps.plans.get(userId, planId);
    if (!plan) throw new VigilError('PLAN_NOT_FOUND', `no plan "${planId}"`);
    return plan;
  }

  async detail(userId: string, planId: string, options: { toolCallLimit?: number | undefined; toolCallCursor?: string | undefined } = {}): Promise<PlanDetail> {
    const plan = await this.get(userId, planId);
    const page = await this.deps.plans.listToolCalls(userId, planId, { limit: options.toolCallLimit ?? PLAN_TOOL_CALL_PAGE, cursor: options.toolCallCursor });
    return { plan, toolCalls: page.toolCalls, toolCallsNextCursor: page.nextCursor };
  }

  /**
   * Resume a plan in a new run that continues from the stored plan (completed milestones
   * are not redone), with fresh per-run budgets. The input is a synthetic message: the
   * person asked for it, but did not write it (I2).
   */
  async resume(userId: string, planId: string, options: { runId?: string; correlationId?: string; signal?: AbortSignal } = {}): Promise<RunOutcome> {
    const { plan, agent } = await this.resumable(userId, planId);
    await this.assertThreadFree(plan);
    const context = this.runContext(plan, 'user', {}, options.correlationId, options.runId);
    const input = resumeMessage(plan, { trigger_type: 'user', trigger_reason: 'the person asked to resume the plan' });
    this.deps.logger.info({ planId, threadId: plan.threadId, runId: context.runId }, 'plan resume requested');
    return this.deps.coordinator.run({ context, agent, input, ...(options.signal ? { signal: options.signal } : {}) });
  }

  /** The overlord's `plan` decision: a heartbeat run that resumes the plan; declined when the thread is busy (I8). */
  async runHeartbeat(plan: PlanRecord, heartbeat: { context: HeartbeatContext; reason: string }): Promise<RunOutcome | RunDeclined> {
    const agent = await this.deps.agents.get(plan.userId, plan.agentId);
    const context = this.runContext(plan, 'heartbeat', { plan_id: plan.id, idle_ms: Math.max(0, Math.round(heartbeat.context.idleTime)), priority: heartbeat.context.priority });
    const input = resumeMessage(plan, {
      trigger_type: 'heartbeat',
      trigger_reason: heartbeat.reason.slice(0, 500),
      heartbeat: { context: heartbeat.context, decision: 'plan' },
    });
    return this.deps.coordinator.tryRun({ context, agent, input, whenBusy: 'decline' });
  }

  isBusy(threadId: string): boolean {
    return this.deps.coordinator.activeRunOf(threadId) !== undefined;
  }

  /** The tools a planner agent has now: built-ins and its MCP servers' tools (and which servers failed). */
  async tools(userId: string, agentId: string): Promise<{ tools: readonly ToolDescriptor[]; unavailable: ReadonlyArray<{ server: string; error: string }> }> {
    const agent = await this.deps.agents.get(userId, agentId);
    const toolbox = await this.deps.toolboxes.toolboxFor({ namespace: { userId, agentId }, settings: plannerSettingsWithTools(agent.settings) });
    return { tools: toolbox.descriptors, unavailable: toolbox.unavailable };
  }

  async settings(userId: string, agentId: string): Promise<PlannerSettings> {
    return plannerSettingsOf((await this.deps.agents.get(userId, agentId)).settings);
  }

  /** Replace the agent's planner settings (validated; defaults filled in). */
  async updateSettings(userId: string, agentId: string, input: unknown): Promise<PlannerSettings> {
    const parsed = plannerSettingsInputSchema.safeParse(input);
    if (!parsed.success) throw new VigilError('VALIDATION_FAILED', parsed.error.issues.map((issue) => `/${issue.path.join('/')} ${issue.message}`).join('; '));
    await this.deps.agents.updateSetting(userId, agentId, 'planner', parsed.data);
    return parsed.data;
  }

  /** The checks of `resume`, for a caller that must answer 404/409 before it starts streaming. */
  async assertResumable(userId: string, planId: string): Promise<void> {
    const { plan } = await this.resumable(userId, planId);
    await this.assertThreadFree(plan);
  }

  /**
   * Nothing else holds the plan's thread: no run on it (PLAN_BUSY), and no step of it waiting
   * for a person's decision on a tool call (THREAD_AWAITING_APPROVAL) — the decision carries
   * that step on; a resume beside it would start another step and leave the first one's
   * requests to be decided for nothing.
   */
  private async assertThreadFree(plan: PlanRecord): Promise<void> {
    if (this.deps.coordinator.activeRunOf(plan.threadId)) throw new VigilError('PLAN_BUSY', `a run is working on the thread of plan "${plan.id}"`);
    if (await this.deps.awaitingApproval?.(plan.threadId)) {
      throw new VigilError('THREAD_AWAITING_APPROVAL', `plan "${plan.id}" waits for a decision on a tool call (GET /api/approvals?status=pending); the decision carries it on`);
    }
  }

  private async resumable(userId: string, planId: string) {
    const plan = await this.get(userId, planId);
    if (!OPEN_PLAN_STATUSES.has(plan.status)) throw new VigilError('PLAN_NOT_RESUMABLE', `plan "${planId}" is ${plan.status}`);
    const agent = await this.deps.agents.get(userId, plan.agentId);
    if (agent.kind !== 'planner') throw new VigilError('PLAN_NOT_RESUMABLE', `the agent of plan "${planId}" is not a planner`);
    return { plan, agent };
  }

  private runContext(plan: PlanRecord, trigger: RunContext['trigger'], meta: Record<string, unknown>, correlationId?: string, runId?: string): RunContext {
    return {
      runId: runId ?? randomUUID(),
      threadId: plan.threadId,
      userId: plan.userId,
      agentId: plan.agentId,
      trigger,
      meta,
      requestedAt: this.deps.clock.now().toISOString(),
      correlationId: correlationId ?? randomUUID(),
    };
  }
}

/** The synthetic input of a resume: the model sees a plain instruction; the metadata says who wrote it and what to resume. */
export function resumeMessage(plan: PlanRecord, metadata: Record<string, unknown>): HumanMessage {
  const goal = plan.goal ?? plan.request;
  return new HumanMessage({
    id: randomUUID(),
    content: `Continue working on the plan “${goal.slice(0, 300)}” from where it stopped.`,
    additional_kwargs: { synthetic: true, ...metadata, planner: { action: 'resume', planId: plan.id } },
  });
}
