import type { Logger } from 'pino';
import { z } from 'zod';
import type { JobQueue } from '../../app/job-queue.js';
import type { HeartbeatRecord, PlanHeartbeats, PlanRecord, PlanRepository } from '../../app/plans/plan-ports.js';
import type { AgentRepository, ChatModelResolver, Clock, RunRepository, ThreadRepository } from '../../app/ports.js';
import type { RunDeclined, RunOutcome } from '../../app/run-coordinator.js';
import { overlordDecision } from '../../domain/planner/planner-decisions.js';
import { plannerSettingsOf, type OverlordSettings } from '../../domain/planner/planner-settings.js';
import type { HeartbeatContext } from '../../domain/planner/planner-state.js';
import { standaloneDecisionMessages } from './planner-prompts.js';
import { decide, type DecisionMessages } from './structured-decision.js';
import type { ContextWindow } from '../context/context-window.js';

export const OVERLORD_QUEUE = 'overlord';

const heartbeatPayloadSchema = z.object({ userId: z.string().min(1), threadId: z.string().min(1), planId: z.string().min(1), agentId: z.string().min(1) });
export type HeartbeatPayload = z.infer<typeof heartbeatPayloadSchema>;

/** What one wake did, for logs and tests. `modelCalled` is false for every deterministic outcome. */
export type WakeOutcome =
  | { outcome: 'nothing_pending' | 'disabled' | 'invalid'; modelCalled: false }
  | { outcome: 'busy' | 'not_idle'; modelCalled: false; nextCheckAt: string }
  | { outcome: 'max_wakes'; modelCalled: false }
  | { outcome: 'wait'; modelCalled: true; nextCheckAt: string; reason: string }
  | { outcome: 'end'; modelCalled: true; reason: string }
  | { outcome: 'plan'; modelCalled: true; reason: string; runId: string | null; declined?: string };

export interface OverlordDependencies {
  jobs: JobQueue;
  plans: PlanRepository;
  threads: Pick<ThreadRepository, 'get'>;
  agents: Pick<AgentRepository, 'get'>;
  runs: Pick<RunRepository, 'listByThread'>;
  models: ChatModelResolver;
  defaultModel: string;
  /** Bounds the decision's input to the agent's context budget (I14). */
  context?: ContextWindow;
  /** Start the heartbeat run that resumes the plan (declined when the thread is busy, I8). */
  runHeartbeat: (plan: PlanRecord, heartbeat: { context: HeartbeatContext; reason: string }) => Promise<RunOutcome | RunDeclined>;
  /** A run in flight on the thread in this process. */
  /** A run in progress, or a thread waiting for a person's approval: the heartbeat is put off. */
  isBusy: (threadId: string) => boolean | Promise<boolean>;
  clock: Clock;
  logger: Logger;
}

/**
 * The overlord: an idle thread with an unfinished plan gets a heartbeat — one job per
 * thread on the JobQueue (queue `overlord`, key = thread id), never a global interval.
 *
 * Each wake first runs a cheap deterministic check, with no model call: is there still
 * an open plan with work left, is the agent still a planner with heartbeats on, is the
 * thread idle and free, are wakes left? Only then does the model decide, within the
 * wake's budget (bounded retries and tokens): `plan` starts a heartbeat run that resumes
 * the plan, `wait` schedules the next check at `next_check_at` (clamped), `end` stops
 * the heartbeats. A wake is idempotent for its key: a redelivered job re-checks.
 */
export class Overlord implements PlanHeartbeats {
  constructor(private readonly deps: OverlordDependencies) {}

  /** Take heartbeat jobs from the queue. */
  async start(): Promise<void> {
    await this.deps.jobs.work(OVERLORD_QUEUE, async (job) => {
      await this.wake(job.payload);
    });
  }

  async arm(input: { userId: string; threadId: string; planId: string; agentId: string; delayMs: number }): Promise<void> {
    const dueAt = new Date(this.deps.clock.now().getTime() + input.delayMs);
    const payload: HeartbeatPayload = { userId: input.userId, threadId: input.threadId, planId: input.planId, agentId: input.agentId };
    const scheduled = await this.deps.jobs.schedule({ queue: OVERLORD_QUEUE, key: input.threadId, dueAt, payload });
    const plan = await this.deps.plans.get(input.userId, input.planId);
    if (plan) await this.recordHeartbeat(plan, { status: 'armed', nextCheckAt: scheduled.created ? dueAt.toISOString() : (plan.heartbeat?.nextCheckAt ?? dueAt.toISOString()) });
    this.deps.logger.debug({ threadId: input.threadId, planId: input.planId, dueAt: dueAt.toISOString(), created: scheduled.created }, 'overlord heartbeat armed');
  }

  async disarm(threadId: string): Promise<void> {
    await this.deps.jobs.cancel(OVERLORD_QUEUE, threadId);
  }

  async wake(rawPayload: unknown): Promise<WakeOutcome> {
    const parsed = heartbeatPayloadSchema.safeParse(rawPayload);
    if (!parsed.success) {
      this.deps.logger.error({ issues: parsed.error.issues }, 'overlord heartbeat with an invalid payload; dropped');
      return { outcome: 'invalid', modelCalled: false };
    }
    const payload = parsed.data;
    const log = this.deps.logger.child({ threadId: payload.threadId, planId: payload.planId, component: 'overlord' });
    const now = this.deps.clock.now();

    // ---- the deterministic check: no model call on any of these paths ----
    const thread = await this.deps.threads.get(payload.userId, payload.threadId);
    const agent = thread ? await this.deps.agents.get(payload.userId, thread.agentId) : undefined;
    // The thread's open plan, whatever the job was armed for: a newer plan replaces an older one.
    const plan = (await this.deps.plans.findOpen(payload.userId, payload.threadId)) ?? (await this.deps.plans.get(payload.userId, payload.planId));
    if (!thread || !agent || agent.kind !== 'planner' || !plan || !hasPendingWork(plan) || plan.heartbeat?.status === 'ended') {
      log.info({ planStatus: plan?.status ?? null }, 'overlord: nothing pending; no model call, heartbeats end');
      if (plan && plan.heartbeat?.status !== 'ended') await this.recordHeartbeat(plan, { status: 'ended', nextCheckAt: null, lastReason: 'nothing pending' });
      return { outcome: 'nothing_pending', modelCalled: false };
    }
    const settings = plannerSettingsOf(agent.settings).overlord;
    if (!settings.enabled) {
      log.info('overlord: heartbeats are off for this agent; no model call');
      await this.recordHeartbeat(plan, { status: 'ended', nextCheckAt: null, lastReason: 'heartbeats disabled' });
      return { outcome: 'disabled', modelCalled: false };
    }
    if (await this.deps.isBusy(payload.threadId)) {
      const next = await this.reschedule(payload, plan, now.getTime() + settings.minDelayMs);
      log.info({ nextCheckAt: next }, 'overlord: a run is in progress or the thread waits for an approval; checking later, no model call');
      return { outcome: 'busy', modelCalled: false, nextCheckAt: next };
    }
    const wakes = plan.heartbeat?.wakes ?? 0;
    if (wakes >= settings.maxWakes) {
      log.info({ wakes }, 'overlord: wake budget of the plan spent; heartbeats end');
      await this.recordHeartbeat(plan, { status: 'ended', nextCheckAt: null, lastReason: `max wakes reached (${settings.maxWakes})` });
      return { outcome: 'max_wakes', modelCalled: false };
    }
    const activity = await this.lastActivity(payload, plan, thread.lastUserActivityAt);
    const idleTime = now.getTime() - activity.at;
    if (idleTime < settings.minIdleMs) {
      const next = await this.reschedule(payload, plan, activity.at + settings.minIdleMs);
      log.info({ idleTime, nextCheckAt: next }, 'overlord: thread not idle yet; no model call');
      return { outcome: 'not_idle', modelCalled: false, nextCheckAt: next };
    }

    // ---- the model decides, within the wake's budget ----
    const heartbeatContext: HeartbeatContext = { idleTime, lastActivity: activity.kind, priority: plan.priority };
    const remaining = plan.milestones.filter((milestone) => milestone.status !== 'completed').map((milestone) => milestone.title);
    const modelSpec = agent.model ?? this.deps.defaultModel;
    const model = this.deps.models(modelSpec);
    const messages = standaloneDecisionMessages('overlord', agent.systemPrompt, {
      now: now.toISOString(),
      heartbeatContext,
      plan: { goal: plan.goal ?? plan.request, status: plan.status, stopReason: plan.reason, remainingMilestones: remaining, wakesSoFar: wakes },
      bounds: { earliestNextCheckAt: iso(now.getTime() + settings.minDelayMs), latestNextCheckAt: iso(now.getTime() + settings.maxDelayMs) },
    });
    const context = this.deps.context;
    const owner = { userId: agent.userId, agentId: agent.id, model: modelSpec };
    const bounded: DecisionMessages = context ? (corrections) => context.bound(messages, owner, { name: 'overlord_decision', schema: overlordDecision }, corrections) : messages;
    const answer = await decide(model, overlordDecision, 'overlord_decision', bounded, { retries: 1, maxTokens: settings.wakeMaxTokens });
    const counted = { wakes: wakes + 1 };
    if (!answer.ok) {
      const next = await this.reschedule(payload, plan, now.getTime() + settings.checkAfterMs, { ...counted, lastDecision: 'wait', lastReason: `no valid decision: ${answer.error}` });
      log.warn({ error: answer.error, tokens: answer.tokens }, 'overlord: no valid decision; waiting');
      return { outcome: 'wait', modelCalled: true, nextCheckAt: next, reason: `no valid decision: ${answer.error}` };
    }
    const { decision, reason } = answer.value;
    log.info({ decision, reason, tokens: answer.tokens, heartbeatContext }, 'overlord decided');
    if (decision === 'end') {
      await this.deps.jobs.cancel(OVERLORD_QUEUE, payload.threadId);
      await this.recordHeartbeat(plan, { ...counted, status: 'ended', nextCheckAt: null, lastDecision: 'end', lastReason: reason });
      return { outcome: 'end', modelCalled: true, reason };
    }
    if (decision === 'wait') {
      const requested = answer.value.next_check_at ? Date.parse(answer.value.next_check_at) : now.getTime() + settings.checkAfterMs;
      const next = await this.reschedule(payload, plan, clamp(requested, now.getTime(), settings), { ...counted, lastDecision: 'wait', lastReason: reason });
      return { outcome: 'wait', modelCalled: true, nextCheckAt: next, reason };
    }
    await this.recordHeartbeat(plan, { ...counted, status: 'armed', nextCheckAt: null, lastDecision: 'plan', lastReason: reason });
    const run = await this.deps.runHeartbeat(plan, { context: heartbeatContext, reason });
    if ('declined' in run) {
      const next = await this.reschedule(payload, plan, now.getTime() + settings.minDelayMs);
      log.info({ declined: run.declined, nextCheckAt: next }, 'overlord: heartbeat run declined; checking later');
      return { outcome: 'plan', modelCalled: true, reason, runId: null, declined: run.declined };
    }
    // The run arms the next check itself when it leaves the plan unfinished; make sure of
    // it if the run failed before it could.
    const after = await this.deps.plans.get(payload.userId, plan.id);
    if (after && hasPendingWork(after) && after.heartbeat?.status !== 'ended') await this.arm({ ...payload, planId: plan.id, delayMs: settings.checkAfterMs });
    return { outcome: 'plan', modelCalled: true, reason, runId: run.run.id };
  }

  private async reschedule(payload: HeartbeatPayload, plan: PlanRecord, at: number, record: Partial<HeartbeatRecord> = {}): Promise<string> {
    const dueAt = new Date(at);
    // The job being handled is no longer pending; a check armed meanwhile is replaced, so
    // the next check is the one decided here.
    await this.deps.jobs.cancel(OVERLORD_QUEUE, payload.threadId);
    await this.deps.jobs.schedule({ queue: OVERLORD_QUEUE, key: payload.threadId, dueAt, payload: { ...payload, planId: plan.id } });
    await this.recordHeartbeat(plan, { ...record, status: 'armed', nextCheckAt: dueAt.toISOString() });
    return dueAt.toISOString();
  }

  private async recordHeartbeat(plan: PlanRecord, patch: Partial<HeartbeatRecord>): Promise<void> {
    const current: HeartbeatRecord = plan.heartbeat ?? { status: 'armed', wakes: 0, lastDecision: null, lastReason: null, nextCheckAt: null };
    const heartbeat = { ...current, ...patch };
    plan.heartbeat = heartbeat;
    await this.deps.plans.update(plan.id, { heartbeat }, this.deps.clock.now().toISOString());
  }

  /** The thread's last activity: a person's message, a run's end, or the plan's last change. */
  private async lastActivity(payload: HeartbeatPayload, plan: PlanRecord, lastUserActivityAt: string | null): Promise<{ at: number; kind: string }> {
    const [lastRun] = await this.deps.runs.listByThread(payload.userId, payload.threadId, { limit: 1 });
    const candidates: Array<{ at: number; kind: string }> = [{ at: Date.parse(plan.updatedAt), kind: 'plan_update' }];
    if (lastUserActivityAt) candidates.push({ at: Date.parse(lastUserActivityAt), kind: 'user_input' });
    if (lastRun) candidates.push({ at: Date.parse(lastRun.endedAt ?? lastRun.startedAt), kind: 'agent_run' });
    return candidates.reduce((latest, candidate) => (candidate.at > latest.at ? candidate : latest));
  }
}

/** An open plan still has work: milestones to do, none planned yet, or the final review. */
export function hasPendingWork(plan: PlanRecord): boolean {
  return plan.status === 'planning' || plan.status === 'active' || plan.status === 'stopped';
}

function clamp(at: number, now: number, settings: OverlordSettings): number {
  if (!Number.isFinite(at)) return now + settings.checkAfterMs;
  return Math.min(Math.max(at, now + settings.minDelayMs), now + settings.maxDelayMs);
}

function iso(milliseconds: number): string {
  return new Date(milliseconds).toISOString();
}
