import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { policyFromSettings, type AutonomyPolicy } from '../../domain/autonomy/autonomy-policy.js';
import { followUpDelayMs, planDueTime } from '../../domain/autonomy/follow-up-timing.js';
import type { TimerRecord } from '../../domain/autonomy/timer.js';
import { textOf } from '../../domain/message-content.js';
import { isAutonomousTriggerType, type AutonomousTriggerType } from '../../domain/message-metadata.js';
import type { AgentRecord } from '../ports.js';
import type { RunEndEvent } from '../run-coordinator.js';
import { FOLLOW_UP_QUEUE, latestIso, TimerEvents, type AutonomyDependencies } from './autonomy-dependencies.js';
import type { NewTimer } from './timer-repository.js';
import { TriggerEvaluator } from './trigger-evaluator.js';

export interface PlanRequest {
  agent: AgentRecord;
  threadId: string;
  userId: string;
  /** The agent's reply the follow-up is about; undefined after a run that failed. */
  reply: string | undefined;
  /** The trigger to keep when there is no reply to read (a failed follow-up keeps its own). */
  fallbackTrigger: AutonomousTriggerType;
  sourceRunId: string | null;
  signal: AbortSignal;
  /**
   * Plan only where a person has written (after a run, always): a thread nobody wrote in has
   * no silence to follow up. Off for an explicit request (AutonomyService.planFollowUp).
   */
  requirePerson?: boolean;
}

/**
 * Plans the next follow-up after a run (DESIGN "one run", step 7): only when the agent's
 * policy is on, the thread is not paused and the per-silence cap leaves room; picks the
 * trigger (rules, optionally the evaluator), the delay (backoff per follow-up already
 * sent in this silence, clamped, kept out of quiet hours), and writes the timer and its
 * job in one transaction, replacing the thread's pending one. A follow-up that will not
 * happen is recorded too (dropped or skipped, with its reason).
 */
export class FollowUpScheduler {
  private readonly evaluator: TriggerEvaluator;
  private readonly timerEvents: TimerEvents;

  constructor(private readonly deps: AutonomyDependencies) {
    this.evaluator = new TriggerEvaluator(deps.models, deps.defaultModel, deps.timers);
    this.timerEvents = new TimerEvents(deps.events, deps.clock);
  }

  /** The coordinator's run-end hook. */
  async afterRun(event: RunEndEvent): Promise<void> {
    const { context, outcome } = event;
    const log = this.deps.logger.child({ threadId: context.threadId, runId: context.runId });
    // A person spoke during the run: their own run plans what comes next (I6).
    if (event.supersededByPerson) return log.debug('no follow-up planned: a person sent a message during the run');
    // Cancelled (by its owner, a person's message or a shutdown): nothing to follow up on.
    if (outcome.run.status === 'cancelled') return;
    // Waiting for a person's approval: the thread is not silent, it waits; the resumed run plans (I16).
    if (outcome.run.status === 'interrupted') return log.debug('no follow-up planned: the run waits for an approval');
    const agent = await this.deps.storage.agents.get(context.userId, context.agentId);
    if (!agent) return;
    const reply = [...outcome.messages].reverse().find((message) => message.type === 'ai' && message.visibility === 'user');
    const previous = context.meta.trigger_type;
    try {
      await this.plan({
        agent,
        threadId: context.threadId,
        userId: context.userId,
        reply: reply ? textOf(reply.content) : undefined,
        fallbackTrigger: isAutonomousTriggerType(previous) ? previous : 'check_in',
        sourceRunId: outcome.run.id,
        signal: event.signal,
        requirePerson: true,
      });
    } catch (error) {
      // A person wrote while the evaluator thought: their run plans the next follow-up.
      if (event.signal.aborted) return log.debug('follow-up planning stopped: a person sent a message');
      throw error;
    }
  }

  async plan(request: PlanRequest): Promise<TimerRecord | undefined> {
    const { timers, clock } = this.deps;
    const log = this.deps.logger.child({ threadId: request.threadId, sourceRunId: request.sourceRunId });
    const { policy, problem } = policyFromSettings(request.agent.settings);
    if (problem) log.warn({ agentId: request.agent.id, problem }, 'the agent\'s stored autonomy policy is invalid; autonomy is off for it');
    if (!policy.enabled) return undefined;
    const state = await timers.threadState(request.threadId);
    if (state.paused) return undefined;
    const thread = await this.deps.storage.threads.get(request.userId, request.threadId);
    if (!thread) return undefined;
    const scheduledAgainst = latestIso(thread.lastUserActivityAt, state.lastUserMessageAt);
    const ordinal = (await timers.countFiredInSilence(request.threadId, scheduledAgainst)) + 1;
    const now = clock.now();
    const base = { threadId: request.threadId, userId: request.userId, agentId: request.agent.id, attempt: ordinal, scheduledAgainst, sourceRunId: request.sourceRunId };

    // A follow-up answers a person's silence: on a thread nobody wrote in (a schedule's or a
    // webhook's new thread) there is none, and nobody to follow up with.
    if (request.requirePerson === true && scheduledAgainst === null) {
      return this.record({ ...base, dueAt: now.toISOString(), triggerType: request.fallbackTrigger, reason: 'nobody has written in this thread', state: 'skipped', stateReason: 'no_person' }, now, log);
    }
    // Checked before the evaluator: a cap reached means no model call at all (I5).
    if (ordinal > policy.maxPerSilence) {
      return this.record({ ...base, dueAt: now.toISOString(), triggerType: request.fallbackTrigger, reason: 'no further follow-up in this silence', state: 'skipped', stateReason: 'cap_per_silence' }, now, log);
    }
    const choice =
      request.reply === undefined
        ? { triggerType: request.fallbackTrigger, reason: 'the last run failed; trying again after the backoff', followUp: true }
        : await this.evaluator.choose({ policy, agent: request.agent, reply: request.reply, now, signal: request.signal, log });
    if (!choice.followUp) {
      return this.record({ ...base, dueAt: now.toISOString(), triggerType: choice.triggerType, reason: choice.reason, state: 'skipped', stateReason: 'evaluator_declined' }, now, log);
    }
    const plan = planDueTime(policy, now, followUpDelayMs(policy, choice.triggerType, ordinal));
    if (plan.kind === 'dropped') {
      return this.record({ ...base, dueAt: plan.dueAt.toISOString(), triggerType: choice.triggerType, reason: choice.reason, state: 'dropped', stateReason: plan.reason }, now, log);
    }
    return this.schedule({ ...base, dueAt: plan.dueAt.toISOString(), triggerType: choice.triggerType, reason: choice.reason, state: 'pending', stateReason: null }, policy, now, log);
  }

  /** `now` is the instant the delay was measured from: the timer's created_at, so due − created is the delay. */
  private async schedule(fields: Omit<NewTimer, 'id'>, policy: AutonomyPolicy, now: Date, log: Logger): Promise<TimerRecord> {
    const id = randomUUID();
    const { timer, replaced } = await this.deps.timers.insert({ ...fields, id }, now.toISOString(), async (within) => {
      // The job commits with the timer row: neither exists without the other.
      await this.deps.jobs.schedule({ queue: FOLLOW_UP_QUEUE, key: id, dueAt: new Date(fields.dueAt), payload: { timerId: id } }, { within });
    });
    for (const old of replaced) {
      this.timerEvents.cancelled(old, 'replaced by a newer follow-up');
      await this.deps.jobs.cancel(FOLLOW_UP_QUEUE, old.id).catch((error: unknown) => log.warn({ err: error, timerId: old.id }, 'could not cancel a replaced timer\'s job; it will find the timer cancelled'));
    }
    log.info({ timerId: timer.id, dueAt: timer.dueAt, triggerType: timer.triggerType, attempt: timer.attempt, reason: timer.reason, timeZone: policy.timeZone }, 'follow-up scheduled');
    this.timerEvents.scheduled(timer);
    return timer;
  }

  /** A follow-up that will not happen, kept with its reason so "why not?" has an answer. */
  private async record(fields: Omit<NewTimer, 'id'>, now: Date, log: Logger): Promise<TimerRecord> {
    const { timer } = await this.deps.timers.insert({ ...fields, id: randomUUID() }, now.toISOString());
    log.info({ timerId: timer.id, state: timer.state, reason: timer.stateReason, triggerType: timer.triggerType, attempt: timer.attempt }, 'follow-up not scheduled');
    return timer;
  }
}
