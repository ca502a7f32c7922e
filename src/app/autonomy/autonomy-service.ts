import { AUTONOMY_SETTINGS_KEY, autonomyPolicySchema, policyFromSettings, type AutonomyPolicy, type AutonomyPolicyInput } from '../../domain/autonomy/autonomy-policy.js';
import { followUpDelayMs, planDueTime } from '../../domain/autonomy/follow-up-timing.js';
import type { TimerRecord, TimerState } from '../../domain/autonomy/timer.js';
import { VigilError } from '../../domain/errors.js';
import { textOf } from '../../domain/message-content.js';
import type { DueJob } from '../job-queue.js';
import type { ThreadRecord } from '../ports.js';
import type { RunEndEvent } from '../run-coordinator.js';
import { FOLLOW_UP_QUEUE, TimerEvents, type AutonomyDependencies } from './autonomy-dependencies.js';
import { FollowUpFirer } from './follow-up-firer.js';
import { FollowUpScheduler } from './follow-up-scheduler.js';

/** How late a timer must be before the sweep hands it out again. */
const OVERDUE_AFTER_MS = 10 * 60_000;
const SWEEP_INTERVAL_MS = 10 * 60_000;
/** Pending follow-ups re-planned per read after a policy change. */
const REPLAN_BATCH = 200;

export interface ThreadAutonomy {
  threadId: string;
  /** The agent's policy is on. */
  enabled: boolean;
  /** Autonomy is paused on this thread. */
  paused: boolean;
  pending: TimerRecord[];
}

/**
 * Idle follow-ups: the use cases behind the API (policies, a thread's timers, pause and
 * resume), and the three places autonomy joins the conversation — a person's message
 * (cancel the thread's timers on receipt, I6), the end of every run (plan the next
 * follow-up), and the job queue (fire a due timer).
 */
export class AutonomyService {
  private readonly scheduler: FollowUpScheduler;
  private readonly firer: FollowUpFirer;
  private readonly timerEvents: TimerEvents;
  private sweeper: NodeJS.Timeout | undefined;

  constructor(private readonly deps: AutonomyDependencies) {
    this.scheduler = new FollowUpScheduler(deps);
    this.firer = new FollowUpFirer(deps, (request) => this.scheduler.plan(request));
    this.timerEvents = new TimerEvents(deps.events, deps.clock);
  }

  /** Wire autonomy into the conversation and the job queue (the queue is started by the caller). */
  async attach(): Promise<void> {
    this.deps.conversations.onUserMessage((thread, receivedAt) => this.onUserMessage(thread, receivedAt));
    this.deps.coordinator.onRunEnd((event) => this.afterRun(event));
    await this.deps.jobs.work(FOLLOW_UP_QUEUE, (job) => this.fire(job));
  }

  /**
   * After the job queue started: hand out again any timer whose job went missing (a
   * pg-boss job that ran out of retries across restarts, a row written by hand), now and
   * every SWEEP_INTERVAL_MS. A safety net, not the mechanism: the job queue delivers
   * timers at their due time; a duplicate job only meets the conditional fire (I7).
   */
  async start(): Promise<void> {
    await this.sweep();
    this.sweeper ??= setInterval(() => void this.sweep(), SWEEP_INTERVAL_MS).unref();
  }

  stop(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  async sweep(): Promise<number> {
    const now = this.deps.clock.now().getTime();
    try {
      const overdue = await this.deps.timers.listOverdue({
        dueBefore: new Date(now - OVERDUE_AFTER_MS).toISOString(),
        firedSince: new Date(now - 24 * 3_600_000).toISOString(),
        firedBefore: new Date(now - OVERDUE_AFTER_MS).toISOString(),
        limit: 500,
      });
      let rescheduled = 0;
      for (const timer of overdue) {
        const { created } = await this.deps.jobs.schedule({ queue: FOLLOW_UP_QUEUE, key: timer.id, dueAt: new Date(now), payload: { timerId: timer.id } });
        if (!created) continue;
        rescheduled += 1;
        this.deps.logger.warn({ threadId: timer.threadId, timerId: timer.id, state: timer.state, dueAt: timer.dueAt }, 'a follow-up overdue without a pending job is handed out again');
      }
      return rescheduled;
    } catch (error) {
      this.deps.logger.error({ err: error }, 'follow-up sweep failed');
      return 0;
    }
  }

  /** I6: on receipt of a person's message — before it waits for the thread or reaches a model. */
  async onUserMessage(thread: ThreadRecord, receivedAt: string): Promise<void> {
    // The time first: a follow-up planned from now on is measured against this message.
    await this.deps.timers.noteUserMessage(thread.id, thread.userId, receivedAt);
    await this.cancelPending(thread.id, 'a person sent a message');
  }

  afterRun(event: RunEndEvent): Promise<void> {
    return this.scheduler.afterRun(event);
  }

  fire(job: DueJob): Promise<void> {
    return this.firer.handle(job);
  }

  // ---------- policies ----------

  async getPolicy(userId: string, agentId: string): Promise<AutonomyPolicy> {
    const agent = await this.deps.storage.agents.get(userId, agentId);
    if (!agent) throw new VigilError('AGENT_NOT_FOUND', `no agent "${agentId}"`);
    return policyFromSettings(agent.settings).policy;
  }

  /** Replace an agent's policy; omitted fields take their defaults. */
  async setPolicy(userId: string, agentId: string, input: AutonomyPolicyInput): Promise<AutonomyPolicy> {
    const policy = autonomyPolicySchema.parse(input);
    const agent = await this.deps.storage.agents.updateSetting(userId, agentId, AUTONOMY_SETTINGS_KEY, policy, this.deps.clock.now().toISOString());
    if (!agent) throw new VigilError('AGENT_NOT_FOUND', `no agent "${agentId}"`);
    this.deps.logger.info({ agentId, enabled: policy.enabled, triggerChooser: policy.triggerChooser }, 'autonomy policy set');
    await this.replanPending(userId, agentId);
    return policy;
  }

  /**
   * After a policy change (I5): each pending follow-up of the agent is planned again from
   * its creation under the stored policy — its delay clamped to the new minimum and
   * maximum, kept out of the new quiet hours — and moved there with its job; cancelled
   * when autonomy is now off, dropped when the new quiet hours drop it. Each move is
   * conditional on the timer still pending (I7): one that fires meanwhile is left alone.
   * Caps are still checked when it comes due.
   */
  async replanPending(userId: string, agentId: string): Promise<void> {
    const agent = await this.deps.storage.agents.get(userId, agentId);
    if (!agent) return;
    const { policy } = policyFromSettings(agent.settings);
    let afterId: string | undefined;
    for (;;) {
      const pending = await this.deps.timers.listPendingByAgent(userId, agentId, { ...(afterId === undefined ? {} : { afterId }), limit: REPLAN_BATCH });
      for (const timer of pending) await this.replan(timer, policy);
      if (pending.length < REPLAN_BATCH) return;
      afterId = pending[pending.length - 1]!.id;
    }
  }

  private async replan(timer: TimerRecord, policy: AutonomyPolicy): Promise<void> {
    const now = this.deps.clock.now();
    if (!policy.enabled) return this.settlePending(timer, 'cancelled', 'autonomy turned off for this agent');
    const plan = planDueTime(policy, new Date(timer.createdAt), followUpDelayMs(policy, timer.triggerType, timer.attempt));
    if (plan.kind === 'dropped') return this.settlePending(timer, 'dropped', plan.reason);
    // Already past under the new policy: due now (quiet hours and caps are checked as it fires).
    const dueAt = new Date(Math.max(plan.dueAt.getTime(), now.getTime()));
    if (dueAt.getTime() === Date.parse(timer.dueAt)) return;
    // The timer, its old job out and its new job in, in one transaction: an earlier due time
    // must not wait behind the job already queued for the later one.
    const moved = await this.deps.timers.reschedule(timer.id, dueAt.toISOString(), 're-planned: the autonomy policy changed', now.toISOString(), async (within) => {
      await this.deps.jobs.cancel(FOLLOW_UP_QUEUE, timer.id, { within });
      await this.deps.jobs.schedule({ queue: FOLLOW_UP_QUEUE, key: timer.id, dueAt, payload: { timerId: timer.id } }, { within });
    });
    // Fired, cancelled or replaced meanwhile: nothing moved, not even its job.
    if (!moved) return;
    this.deps.logger.info({ threadId: moved.threadId, timerId: moved.id, from: timer.dueAt, dueAt: moved.dueAt }, 'follow-up re-planned after a policy change');
    this.timerEvents.scheduled(moved);
  }

  private async settlePending(timer: TimerRecord, to: 'cancelled' | 'dropped', reason: string): Promise<void> {
    const settled = await this.deps.timers.transition(timer.id, 'pending', to, { stateReason: reason }, this.deps.clock.now().toISOString());
    if (settled) await this.afterCancel(settled, reason);
  }

  // ---------- a thread's follow-ups ----------

  async status(userId: string, threadId: string): Promise<ThreadAutonomy> {
    const thread = await this.thread(userId, threadId);
    const agent = await this.deps.storage.agents.get(userId, thread.agentId);
    const state = await this.deps.timers.threadState(threadId);
    const pending = await this.deps.timers.listByThread(userId, threadId, { states: ['pending'], limit: 10 });
    return { threadId, enabled: agent ? policyFromSettings(agent.settings).policy.enabled : false, paused: state.paused, pending };
  }

  async listTimers(userId: string, threadId: string, options: { states?: readonly TimerState[]; limit: number }): Promise<TimerRecord[]> {
    await this.thread(userId, threadId);
    return this.deps.timers.listByThread(userId, threadId, options);
  }

  /** Cancel one pending follow-up: TIMER_NOT_FOUND unless it is the user's, on this thread; TIMER_NOT_PENDING once it has fired or ended. */
  async cancelTimer(userId: string, threadId: string, timerId: string): Promise<TimerRecord> {
    await this.thread(userId, threadId);
    const timer = await this.deps.timers.getForUser(userId, timerId);
    if (!timer || timer.threadId !== threadId) throw new VigilError('TIMER_NOT_FOUND', `no timer "${timerId}" on this thread`);
    const cancelled = await this.deps.timers.transition(timerId, 'pending', 'cancelled', { stateReason: 'cancelled by its owner' }, this.deps.clock.now().toISOString());
    if (!cancelled) throw new VigilError('TIMER_NOT_PENDING', `timer "${timerId}" is ${timer.state}, not pending`);
    await this.afterCancel(cancelled, 'cancelled by its owner');
    return cancelled;
  }

  async pause(userId: string, threadId: string): Promise<ThreadAutonomy> {
    const thread = await this.thread(userId, threadId);
    await this.deps.timers.setPaused(threadId, thread.userId, true, this.deps.clock.now().toISOString());
    await this.cancelPending(threadId, 'autonomy paused on this thread');
    return this.status(userId, threadId);
  }

  /**
   * Resume, and plan a follow-up on the agent's last reply if it has the thread's last word
   * and a person has written here (as after a run: no silence where nobody wrote). On a
   * thread that was not paused there is nothing to resume: its pending follow-up stays.
   */
  async resume(userId: string, threadId: string): Promise<ThreadAutonomy> {
    const thread = await this.thread(userId, threadId);
    if (!(await this.deps.timers.threadState(threadId)).paused) return this.status(userId, threadId);
    await this.deps.timers.setPaused(threadId, thread.userId, false, this.deps.clock.now().toISOString());
    const agent = await this.deps.storage.agents.get(userId, thread.agentId);
    const last = (await this.deps.storage.threads.history(userId, threadId, { visibility: 'user', limit: 1 })).messages[0];
    if (agent && last?.type === 'ai') {
      await this.scheduler.plan({
        agent,
        threadId,
        userId,
        reply: textOf(last.content),
        fallbackTrigger: 'check_in',
        sourceRunId: last.runId,
        signal: new AbortController().signal,
        requirePerson: true,
      });
    }
    return this.status(userId, threadId);
  }

  /**
   * Plan a follow-up on a thread now, as the end of a run would (for callers that start
   * a conversation without a run, and for tests of threads with only autonomous activity).
   */
  async planFollowUp(userId: string, threadId: string, reply: string): Promise<TimerRecord | undefined> {
    const thread = await this.thread(userId, threadId);
    const agent = await this.deps.storage.agents.get(userId, thread.agentId);
    if (!agent) throw new VigilError('AGENT_NOT_FOUND', `no agent "${thread.agentId}"`);
    return this.scheduler.plan({ agent, threadId, userId, reply, fallbackTrigger: 'check_in', sourceRunId: null, signal: new AbortController().signal });
  }

  /** The thread's pending follow-up must not fire (a person's message, a pause; a deletion deletes it in its own transaction). */
  private async cancelPending(threadId: string, reason: string): Promise<void> {
    const cancelled = await this.deps.timers.cancelPending(threadId, reason, this.deps.clock.now().toISOString());
    for (const timer of cancelled) await this.afterCancel(timer, reason);
  }

  private async afterCancel(timer: TimerRecord, reason: string): Promise<void> {
    this.deps.logger.info({ threadId: timer.threadId, timerId: timer.id, reason }, 'follow-up cancelled');
    this.timerEvents.cancelled(timer, reason);
    // The job may still be delivered (a race, a failed cancel): it finds the timer cancelled and does nothing.
    await this.deps.jobs.cancel(FOLLOW_UP_QUEUE, timer.id).catch((error: unknown) => this.deps.logger.warn({ err: error, timerId: timer.id }, 'could not cancel a follow-up job'));
  }

  private async thread(userId: string, threadId: string): Promise<ThreadRecord> {
    const thread = await this.deps.storage.threads.get(userId, threadId);
    if (!thread) throw new VigilError('THREAD_NOT_FOUND', `no thread "${threadId}"`);
    return thread;
  }
}
