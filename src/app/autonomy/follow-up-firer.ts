import { randomUUID } from 'node:crypto';
import { HumanMessage } from '@langchain/core/messages';
import type { Logger } from 'pino';
import { policyFromSettings, type AutonomyPolicy } from '../../domain/autonomy/autonomy-policy.js';
import { checkCaps, type SkipReason } from '../../domain/autonomy/follow-up-caps.js';
import { endOfQuietHours } from '../../domain/autonomy/follow-up-timing.js';
import { followUpMessageId, type TimerRecord } from '../../domain/autonomy/timer.js';
import { localDayBounds } from '../../domain/autonomy/zoned-time.js';
import { syntheticMetadata, TRIGGER_PROMPTS } from '../../domain/message-metadata.js';
import type { RunContext } from '../../domain/run-context.js';
import { RetryLater, type DueJob } from '../job-queue.js';
import { textOf } from '../../domain/message-content.js';
import type { AgentRecord, StoredMessage } from '../ports.js';
import type { PlanRequest } from './follow-up-scheduler.js';
import { inspectCutShortTurn, interruptedRun } from '../runs/turn-recovery.js';
import { STOPPING_REASON, type Admission, type RunDeclined, type RunOutcome } from '../run-coordinator.js';
import { FOLLOW_UP_QUEUE, latestIso, TimerEvents, type AutonomyDependencies } from './autonomy-dependencies.js';
import { reserveModelCall } from './model-call-budget.js';

/** How early a delivery may come (clocks, polling) and still fire its timer. */
const EARLY_TOLERANCE_MS = 1_000;

/**
 * Fires follow-up timers: the job queue's handler for FOLLOW_UP_QUEUE.
 *
 * Exactly once, even across crashes (I7):
 * - A pending timer becomes `fired` by one conditional update, taken with the thread's
 *   lock held, just before the run — a second delivery finds it fired.
 * - The follow-up's synthetic message has an id derived from the timer id, so no
 *   delivery can add the turn twice.
 * - A fired timer delivered again (its process died mid-fire, or a shutdown cut the run
 *   short) is recovered under the thread's lock, where nothing else can be running on
 *   the thread: if the checkpoint has the turn answered, nothing more happens; if it has
 *   the turn unanswered, that turn is finished (resumed from the checkpoint); if the
 *   turn never reached the checkpoint, it is started, with the same message id.
 *
 * Every cap, the quiet hours and the budget are checked in the same locked admission,
 * before any model call, whoever is connected (I5); a person's newer message drops the
 * timer there too (I6, belt and braces behind the cancel on receipt).
 */
export class FollowUpFirer {
  private readonly timerEvents: TimerEvents;

  constructor(
    private readonly deps: AutonomyDependencies,
    /** What the end of a run does: plan the next follow-up (the scheduler's). */
    private readonly planAfter: (request: PlanRequest) => Promise<unknown>,
  ) {
    this.timerEvents = new TimerEvents(deps.events, deps.clock);
  }

  async handle(job: DueJob): Promise<void> {
    const timerId = typeof job.payload.timerId === 'string' ? job.payload.timerId : job.key;
    const timer = await this.deps.timers.get(timerId);
    const log = this.deps.logger.child({ timerId, jobId: job.id, delivery: job.attempt, ...(timer ? { threadId: timer.threadId } : {}) });
    // Its thread was deleted, and the timer with it (owned-rows.ts): nothing of it may fire.
    if (!timer) return log.debug('a follow-up job names no timer (its thread was deleted); nothing to do');
    if (timer.state === 'pending') return this.fire(timer, log);
    if (timer.state === 'fired') return this.recover(timer, log);
    log.debug({ state: timer.state, reason: timer.stateReason }, 'follow-up timer already settled; nothing to do');
  }

  private async fire(timer: TimerRecord, log: Logger): Promise<void> {
    const owner = await this.ownerOf(timer, log);
    if (!owner) return;
    const early = Date.parse(timer.dueAt) - this.deps.clock.now().getTime();
    if (early > EARLY_TOLERANCE_MS) {
      // A job for an older due time of this timer (it was deferred since): wait for the new one.
      await this.deps.jobs.schedule({ queue: FOLLOW_UP_QUEUE, key: timer.id, dueAt: new Date(timer.dueAt), payload: { timerId: timer.id } });
      return log.debug({ dueAt: timer.dueAt }, 'follow-up job arrived before its timer is due; rescheduled');
    }
    const outcome = await this.start(timer, followUpMessage(timer), {
      admit: (context, signal) => this.admitFire(timer, owner.policy, context, signal, log),
      policy: owner.policy,
      agent: owner.agent,
    });
    if ('declined' in outcome) {
      if (outcome.declined === 'thread_busy') await this.defer(timer, owner.policy, 'its thread was busy', log);
      return;
    }
    this.afterFire(outcome, log);
  }

  private async admitFire(timer: TimerRecord, policy: AutonomyPolicy, context: RunContext, signal: AbortSignal, log: Logger): Promise<Admission> {
    const { timers, clock } = this.deps;
    const now = clock.now();
    const current = await timers.get(timer.id);
    if (current?.state !== 'pending') return { admitted: false, reason: 'not_pending' };
    // Moved later since this delivery read it (a policy change re-planned it): its new job fires it then.
    if (Date.parse(current.dueAt) - now.getTime() > EARLY_TOLERANCE_MS) {
      // Its job is normally there already (kept then); scheduled here so that it never goes missing.
      await this.deps.jobs.schedule({ queue: FOLLOW_UP_QUEUE, key: current.id, dueAt: new Date(current.dueAt), payload: { timerId: current.id } });
      return { admitted: false, reason: 'not_due' };
    }
    // A person's message is on its way in: it cancels this timer itself.
    if (signal.aborted) return { admitted: false, reason: 'preempted' };
    // The thread waits for a person's decision: acting again on it now would pile up asks.
    if (await this.deps.awaitingApproval?.(timer.threadId)) return this.settle(current, 'pending', 'skipped', 'awaiting_approval', log);
    const refusal = await this.refusal(current, policy, now);
    if (refusal === 'quiet_hours' && policy.quietHours?.mode === 'defer') {
      await this.moveTo(current, endOfQuietHours(now, policy.quietHours, policy.timeZone), 'it came due in quiet hours', log);
      return { admitted: false, reason: 'quiet_hours_deferred' };
    }
    if (refusal) return this.settle(current, 'pending', refusal === 'superseded_by_user_message' || refusal === 'quiet_hours' ? 'dropped' : 'skipped', refusal, log);
    // The one place a timer becomes fired (I7): a conditional update, under the thread's lock.
    const fired = await timers.transition(current.id, 'pending', 'fired', { runId: context.runId, firedAt: now.toISOString(), stateReason: null }, now.toISOString());
    if (!fired) return { admitted: false, reason: 'not_pending' };
    // The budget last, so it is spent only by a fire that really happens.
    if (!(await reserveModelCall(timers, log, policy, current, now, 'follow-up'))) return this.settle(fired, 'fired', 'skipped', 'budget', log);
    log.info({ runId: context.runId, triggerType: fired.triggerType, attempt: fired.attempt }, 'follow-up fired');
    this.timerEvents.fired(fired, context.runId);
    return { admitted: true };
  }

  /** Why this timer must not fire now (I5, I6), or undefined. */
  private async refusal(timer: TimerRecord, policy: AutonomyPolicy, now: Date): Promise<SkipReason | undefined> {
    const { timers, storage } = this.deps;
    if (!policy.enabled) return 'autonomy_disabled';
    const state = await timers.threadState(timer.threadId);
    if (state.paused) return 'paused';
    const thread = await storage.threads.get(timer.userId, timer.threadId);
    const lastUserMessage = latestIso(thread?.lastUserActivityAt, state.lastUserMessageAt);
    if (lastUserMessage !== null && (timer.scheduledAgainst === null || Date.parse(lastUserMessage) > Date.parse(timer.scheduledAgainst))) return 'superseded_by_user_message';
    const day = localDayBounds(now, policy.timeZone);
    const caps = checkCaps(policy, now, {
      firedThisSilence: await timers.countFiredInSilence(timer.threadId, timer.scheduledAgainst),
      firedToday: await timers.countFiredBetween(timer.threadId, day.start.toISOString(), day.end.toISOString()),
    });
    return caps.allowed ? undefined : caps.reason;
  }

  /**
   * A fired timer delivered again. Under the thread's lock nothing else runs on the
   * thread, so a run still marked running is orphaned: finish its turn, once.
   */
  private async recover(timer: TimerRecord, log: Logger): Promise<void> {
    const previous = timer.runId ? await this.deps.storage.runs.get(timer.userId, timer.runId) : undefined;
    if (previous && !interruptedRun(previous)) return log.debug({ runId: previous.id, status: previous.status }, 'follow-up already fired; a repeated delivery does nothing');
    const owner = await this.ownerOf(timer, log);
    if (!owner) return;
    const outcome = await this.start(timer, followUpMessage(timer), {
      admit: (context) => this.admitRecovery(timer, owner.agent, owner.policy, context, log),
      policy: owner.policy,
      agent: owner.agent,
    });
    if ('declined' in outcome) {
      // The thread is busy: perhaps with the very run we came to recover, still alive.
      if (outcome.declined === 'thread_busy') throw new RetryLater('the follow-up\'s thread is busy; its recovery will be tried again');
      return;
    }
    this.afterFire(outcome, log);
  }

  private async admitRecovery(timer: TimerRecord, agent: AgentRecord, policy: AutonomyPolicy, context: RunContext, log: Logger): Promise<Admission> {
    const { timers, storage, clock, coordinator } = this.deps;
    const now = clock.now().toISOString();
    const current = await timers.get(timer.id);
    if (current?.state !== 'fired' || current.runId !== timer.runId) return { admitted: false, reason: 'already_recovered' };
    const previous = current.runId ? await storage.runs.get(current.userId, current.runId) : undefined;
    if (previous && !interruptedRun(previous)) return { admitted: false, reason: 'already_done' };
    const { turn, synced } = await inspectCutShortTurn({ coordinator, storage }, agent, context, { messageId: followUpMessageId(timer.id) }, { runId: current.runId, record: previous }, now);
    log.warn({ previousRunId: current.runId, turn }, 'recovering a follow-up whose fire was interrupted');
    if (turn === 'answered' || turn === 'superseded') {
      // The checkpoint has the whole turn (or a person moved on): only the announcement lagged.
      if (turn === 'answered') await this.onAnsweredByCrashedRun(agent, current, synced, log);
      return { admitted: false, reason: `turn_${turn}` };
    }
    // Not started again: settled, so that the timer does not stay `fired` naming a run that
    // may never have been recorded (a kill between the claim and the run's record).
    if (turn === 'absent' && (await this.refusal(current, policy, clock.now())) === 'superseded_by_user_message') {
      return this.settle(current, 'fired', 'dropped', 'superseded_by_user_message', log);
    }
    if (!(await reserveModelCall(timers, log, policy, current, clock.now(), 'follow-up recovery'))) return this.settle(current, 'fired', 'skipped', 'budget', log);
    await timers.transition(current.id, 'fired', 'fired', { runId: context.runId }, now);
    // Unanswered: finish the turn from its checkpoint. Absent: start it, with the same message id.
    return turn === 'unanswered' ? { admitted: true, input: null } : { admitted: true };
  }

  /**
   * The crashed run wrote its reply but never reached its end: plan what its end would
   * have planned (the next follow-up, or the cap that stops them).
   */
  private async onAnsweredByCrashedRun(agent: AgentRecord, timer: TimerRecord, synced: readonly StoredMessage[], log: Logger): Promise<void> {
    const thread = await this.deps.storage.threads.get(timer.userId, timer.threadId);
    const reply = [...synced].reverse().find((message) => message.type === 'ai' && message.visibility === 'user');
    if (!thread || !reply) return;
    try {
      await this.planAfter({ agent, threadId: timer.threadId, userId: timer.userId, reply: textOf(reply.content), fallbackTrigger: timer.triggerType, sourceRunId: timer.runId, signal: new AbortController().signal });
    } catch (error) {
      log.error({ err: error }, 'could not plan the follow-up after a recovered run');
    }
  }

  private start(
    timer: TimerRecord,
    input: HumanMessage,
    gate: { admit: (context: RunContext, signal: AbortSignal) => Promise<Admission>; policy: AutonomyPolicy; agent: AgentRecord },
  ): Promise<RunOutcome | RunDeclined> {
    const meta = { trigger_type: timer.triggerType, trigger_reason: timer.reason.slice(0, 500), timer_id: timer.id };
    return this.deps.conversations.tryRunTriggered(
      timer.userId,
      timer.threadId,
      { trigger: 'autonomy', input, meta, runId: randomUUID(), correlationId: timer.id },
      {
        whenBusy: 'decline',
        admit: gate.admit,
        // Each retry of a failing model is a model call: it needs the budget too (I5).
        beforeRetry: () => reserveModelCall(this.deps.timers, this.deps.logger.child({ timerId: timer.id }), gate.policy, timer, this.deps.clock.now(), 'follow-up retry'),
      },
    );
  }

  private afterFire(outcome: RunOutcome, log: Logger): void {
    log.info({ runId: outcome.run.id, status: outcome.run.status, reason: outcome.run.reason }, 'follow-up run ended');
    // Cut short by a shutdown: deliver again after the restart, which finishes the turn.
    if (outcome.run.status === 'cancelled' && outcome.run.reason === STOPPING_REASON) throw new RetryLater('the follow-up was interrupted by a shutdown');
  }

  /** The agent and its policy; a timer whose thread or agent is gone is skipped. */
  private async ownerOf(timer: TimerRecord, log: Logger): Promise<{ agent: AgentRecord; policy: AutonomyPolicy } | undefined> {
    const agent = await this.deps.storage.agents.get(timer.userId, timer.agentId);
    const thread = agent ? await this.deps.storage.threads.get(timer.userId, timer.threadId) : undefined;
    if (!agent || !thread) {
      if (timer.state === 'pending') await this.settle(timer, 'pending', 'skipped', 'thread_or_agent_gone', log);
      return undefined;
    }
    return { agent, policy: policyFromSettings(agent.settings).policy };
  }

  /** Try again a little later: never interleaved with the run that holds the thread (I8). */
  private async defer(timer: TimerRecord, policy: AutonomyPolicy, why: string, log: Logger): Promise<void> {
    await this.moveTo(timer, new Date(this.deps.clock.now().getTime() + policy.busyRetryMs), why, log);
  }

  private async moveTo(timer: TimerRecord, dueAt: Date, why: string, log: Logger): Promise<void> {
    const moved = await this.deps.timers.reschedule(timer.id, dueAt.toISOString(), `deferred: ${why}`, this.deps.clock.now().toISOString(), async (within) => {
      await this.deps.jobs.schedule({ queue: FOLLOW_UP_QUEUE, key: timer.id, dueAt, payload: { timerId: timer.id } }, { within });
    });
    if (!moved) return;
    log.info({ dueAt: moved.dueAt, why }, 'follow-up deferred');
    this.timerEvents.scheduled(moved);
  }

  private async settle(timer: TimerRecord, from: 'pending' | 'fired', to: 'dropped' | 'skipped', reason: string, log: Logger): Promise<Admission> {
    const now = this.deps.clock.now().toISOString();
    const settled = await this.deps.timers.transition(timer.id, from, to, { stateReason: reason, ...(from === 'fired' ? { firedAt: null, runId: null } : {}) }, now);
    if (settled) {
      log.info({ state: to, reason, triggerType: timer.triggerType, attempt: timer.attempt }, 'follow-up not sent');
      this.timerEvents.cancelled(settled, reason);
    }
    return { admitted: false, reason };
  }
}

/** The follow-up's synthetic message: the trigger's natural prompt, metadata saying so (seed 000). */
export function followUpMessage(timer: TimerRecord): HumanMessage {
  // The evaluator's reasoning stays out of the thread: the message says only where it came from.
  const reason = timer.reason.startsWith('evaluator:') ? 'chosen by the model evaluator' : timer.reason;
  return new HumanMessage({
    id: followUpMessageId(timer.id),
    content: TRIGGER_PROMPTS[timer.triggerType],
    additional_kwargs: { ...syntheticMetadata(timer.triggerType, reason), timer_id: timer.id },
  });
}

/** A run that did not finish its turn: still marked running or ended by the sweep (its process died), or cut short by a shutdown. */

