import { randomUUID } from 'node:crypto';
import { HumanMessage } from '@langchain/core/messages';
import type { Logger } from 'pino';
import { policyFromSettings, type AutonomyPolicy } from '../../domain/autonomy/autonomy-policy.js';
import { checkCaps } from '../../domain/autonomy/follow-up-caps.js';
import { endOfQuietHours } from '../../domain/autonomy/follow-up-timing.js';
import { localDayBounds } from '../../domain/autonomy/zoned-time.js';
import { VigilError } from '../../domain/errors.js';
import type { RunContext } from '../../domain/run-context.js';
import type { TimerRepository } from '../autonomy/timer-repository.js';
import { reserveModelCall } from '../autonomy/model-call-budget.js';
import type { ConversationService } from '../conversation-service.js';
import { RetryLater, type DueJob, type JobQueue } from '../job-queue.js';
import type { AgentRecord, Clock, Storage } from '../ports.js';
import { STOPPING_REASON, type Admission, type RunCoordinator, type RunDeclined, type RunOutcome } from '../run-coordinator.js';
import { inspectCutShortTurn, interruptedRun } from '../runs/turn-recovery.js';
import type { CheckInRecord, CheckInRepository } from './check-in-ports.js';

export const CHECK_IN_QUEUE = 'check-in';

/** Pending check-ins one thread may hold: the agent cannot pile them up. */
export const MAX_PENDING_CHECK_INS = 5;
/** The furthest ahead a check-in may be set, whatever the policy allows. */
const MAX_HORIZON_MS = 30 * 86_400_000;
const EARLY_TOLERANCE_MS = 1_000;

/** The prompt of a check-in's run: internal (I1, I2), natural; the envelope carries the reason and when it was set. */
export const CHECK_IN_PROMPT = 'You set yourself a check-in on this conversation earlier. Continue it now, as you planned.';

export interface CheckInDependencies {
  repository: CheckInRepository;
  storage: Storage;
  timers: TimerRepository;
  jobs: JobQueue;
  conversations: ConversationService;
  clock: Clock;
  logger: Logger;
  awaitingApproval?: (threadId: string) => Promise<boolean>;
  /** Where a cut-short check-in's turn stands (turn-recovery.ts). */
  coordinator: RunCoordinator;
}

/** The id of a check-in's prompt message: the same on every attempt, so a recovery finds it in the checkpoint. */
function checkInMessageId(checkInId: string): string {
  return `check-in-${checkInId}`;
}

/**
 * Check-ins the agent sets itself (schedule_check_in): a durable one-shot timer of its own
 * kind. Set only within the agent's autonomy policy and a horizon; fired at most once (a
 * conditional update under the thread's lock, I7) and only within the caps, quiet hours and
 * budget, checked before any model call (I5). A person's message does not cancel it (the
 * agent promised it); the person can list and cancel it.
 */
export class CheckInService {
  constructor(private readonly deps: CheckInDependencies) {}

  async attach(): Promise<void> {
    await this.deps.jobs.work(CHECK_IN_QUEUE, (job) => this.fire(job));
  }

  /** The schedule_check_in tool: `at` (ISO) or `inSeconds`. Throws a message the model can read. */
  async schedule(run: { userId: string; agentId: string; threadId: string; runId: string }, input: { at?: string | undefined; inSeconds?: number | undefined; reason: string }): Promise<CheckInRecord> {
    const { storage, clock, repository, jobs } = this.deps;
    const agent = await storage.agents.get(run.userId, run.agentId);
    if (!agent) throw new Error('the agent no longer exists');
    const { policy } = policyFromSettings(agent.settings);
    if (!policy.enabled) throw new Error('check-ins need autonomy, which is off for this agent; the person can turn it on');
    const now = clock.now();
    if ((input.at === undefined) === (input.inSeconds === undefined)) throw new Error('give exactly one of "at" (an ISO 8601 time) or "in_seconds"');
    const due = input.at !== undefined ? new Date(input.at) : new Date(now.getTime() + (input.inSeconds ?? 0) * 1000);
    if (Number.isNaN(due.getTime())) throw new Error(`"${input.at}" is not an ISO 8601 time`);
    const delay = due.getTime() - now.getTime();
    const horizon = Math.min(policy.maxDelayMs, MAX_HORIZON_MS);
    if (delay < policy.minDelayMs) throw new Error(`a check-in must be at least ${Math.ceil(policy.minDelayMs / 1000)} s ahead`);
    if (delay > horizon) throw new Error(`a check-in may be at most ${Math.floor(horizon / 1000)} s ahead`);
    const pending = await repository.listByThread(run.userId, run.threadId, { pendingOnly: true, limit: MAX_PENDING_CHECK_INS + 1 });
    if (pending.length >= MAX_PENDING_CHECK_INS) throw new Error(`this conversation already has ${pending.length} pending check-ins; cancel one first`);
    const id = randomUUID();
    const record = await repository.create(
      { id, userId: run.userId, agentId: run.agentId, threadId: run.threadId, dueAt: due.toISOString(), reason: input.reason, setAt: now.toISOString(), setByRunId: run.runId },
      (within) => jobs.schedule({ queue: CHECK_IN_QUEUE, key: id, dueAt: due, payload: { checkInId: id } }, { within }).then(() => undefined),
    );
    this.deps.logger.info({ threadId: run.threadId, checkInId: id, dueAt: record.dueAt }, 'check-in set by the agent');
    return record;
  }

  list(userId: string, threadId: string, pendingOnly = true): Promise<CheckInRecord[]> {
    return this.deps.repository.listByThread(userId, threadId, { pendingOnly, limit: 100 });
  }

  /** The person (API) or the agent (cancel_check_in); another user's check-in is not found (I12). */
  async cancel(userId: string, threadId: string, id: string, by: 'person' | 'agent'): Promise<CheckInRecord> {
    const record = await this.deps.repository.get(id);
    if (!record || record.userId !== userId || record.threadId !== threadId) throw new VigilError('TIMER_NOT_FOUND', `no check-in "${id}" on this thread`);
    const cancelled = await this.deps.repository.transition(id, 'pending', 'cancelled', { stateReason: `cancelled by the ${by}` }, this.deps.clock.now().toISOString());
    if (!cancelled) throw new VigilError('TIMER_NOT_PENDING', `the check-in is already ${record.state}`);
    await this.deps.jobs.cancel(CHECK_IN_QUEUE, id).catch(() => false);
    return cancelled;
  }

  async fire(job: DueJob): Promise<void> {
    const id = String(job.payload.checkInId ?? job.key);
    const record = await this.deps.repository.get(id);
    const log = this.deps.logger.child({ checkInId: id, jobId: job.id, ...(record ? { threadId: record.threadId } : {}) });
    if (record?.state === 'fired') return this.recover(record, log);
    if (!record || record.state !== 'pending') return log.debug({ state: record?.state }, 'check-in not pending; nothing to do');
    if (Date.parse(record.dueAt) - this.deps.clock.now().getTime() > EARLY_TOLERANCE_MS) return this.moveTo(record, new Date(record.dueAt), null, log);
    const owner = await this.ownerOf(record);
    if (!owner) return void (await this.settle(record, 'thread_or_agent_gone', log));
    const outcome = await this.start(record, owner.policy, (context) => this.admit(record, owner.policy, context, log), log);
    if ('declined' in outcome) {
      if (outcome.declined === 'thread_busy') await this.moveTo(record, new Date(this.deps.clock.now().getTime() + owner.policy.busyRetryMs), 'its thread was busy', log);
      return;
    }
    this.afterRun(outcome, log);
  }

  /**
   * A fired check-in delivered again: its run was cut short (a graceful stop, or its
   * process died) if its record says so, and then its turn is finished, once, under the
   * thread's lock, as a follow-up's is; the agent promised it. A run that ended otherwise
   * (answered, failed, pre-empted by a person) is the check-in kept: nothing to do.
   */
  private async recover(record: CheckInRecord, log: Logger): Promise<void> {
    const previous = record.runId ? await this.deps.storage.runs.get(record.userId, record.runId) : undefined;
    if (previous && !interruptedRun(previous)) return log.debug({ runId: previous.id, status: previous.status }, 'check-in already fired; a repeated delivery does nothing');
    const owner = await this.ownerOf(record);
    if (!owner) return log.info('a cut-short check-in is not finished: its thread or agent is gone');
    const outcome = await this.start(record, owner.policy, (context) => this.admitRecovery(record, owner, context, log), log);
    if ('declined' in outcome) {
      // Busy: perhaps with the very run we came to recover, still alive.
      if (outcome.declined === 'thread_busy') throw new RetryLater("the check-in's thread is busy; its recovery will be tried again");
      return;
    }
    this.afterRun(outcome, log);
  }

  private async admitRecovery(record: CheckInRecord, owner: { agent: AgentRecord; policy: AutonomyPolicy }, context: RunContext, log: Logger): Promise<Admission> {
    const { repository, storage, timers, clock, coordinator } = this.deps;
    const now = clock.now();
    const current = await repository.get(record.id);
    if (current?.state !== 'fired' || current.runId !== record.runId) return { admitted: false, reason: 'already_recovered' };
    const previous = current.runId ? await storage.runs.get(current.userId, current.runId) : undefined;
    if (previous && !interruptedRun(previous)) return { admitted: false, reason: 'already_done' };
    const { turn } = await inspectCutShortTurn({ coordinator, storage }, owner.agent, context, { messageId: checkInMessageId(record.id) }, { runId: current.runId, record: previous }, now.toISOString());
    log.warn({ previousRunId: current.runId, turn }, 'recovering a check-in whose run was cut short');
    // The checkpoint has the whole turn, or a person spoke since: kept, or moot.
    if (turn === 'answered' || turn === 'superseded') return { admitted: false, reason: `turn_${turn}` };
    // The fire charged one call. No run recorded: its process died before the run began, no
    // model was called, and that charge pays for this call; charged again, one call counted twice.
    if (previous !== undefined && !(await reserveModelCall(timers, log, owner.policy, current, now, 'check-in recovery'))) {
      await repository.transition(current.id, 'fired', 'skipped', { stateReason: 'budget' }, now.toISOString());
      return { admitted: false, reason: 'budget' };
    }
    await repository.transition(current.id, 'fired', 'fired', { runId: context.runId }, now.toISOString());
    // Unanswered: finish the turn from its checkpoint. Absent: start it, with the same message id.
    return turn === 'unanswered' ? { admitted: true, input: null } : { admitted: true };
  }

  private start(record: CheckInRecord, policy: AutonomyPolicy, admit: (context: RunContext) => Promise<Admission>, log: Logger): Promise<RunOutcome | RunDeclined> {
    const input = new HumanMessage({
      id: checkInMessageId(record.id),
      content: CHECK_IN_PROMPT,
      additional_kwargs: { synthetic: true, trigger_type: 'check_in', trigger_reason: record.reason.slice(0, 500), check_in_id: record.id },
    });
    const meta = { check_in_id: record.id, reason: record.reason.slice(0, 500), set_at_utc: record.setAt };
    return this.deps.conversations.tryRunTriggered(
      record.userId,
      record.threadId,
      { trigger: 'check_in', input, meta, runId: randomUUID(), correlationId: record.id },
      {
        whenBusy: 'decline',
        admit,
        beforeRetry: () => reserveModelCall(this.deps.timers, log, policy, record, this.deps.clock.now(), 'check-in retry'),
      },
    );
  }

  private afterRun(outcome: RunOutcome, log: Logger): void {
    log.info({ runId: outcome.run.id, status: outcome.run.status, reason: outcome.run.reason }, 'check-in run ended');
    // Cut short by a shutdown: delivered again after the restart, which finishes the turn (recover).
    if (outcome.run.status === 'cancelled' && outcome.run.reason === STOPPING_REASON) throw new RetryLater('the check-in was interrupted by a shutdown');
  }

  /** The check-in's agent and its policy, while the agent and the thread exist. */
  private async ownerOf(record: CheckInRecord): Promise<{ agent: AgentRecord; policy: AutonomyPolicy } | undefined> {
    const agent = await this.deps.storage.agents.get(record.userId, record.agentId);
    const thread = agent ? await this.deps.storage.threads.get(record.userId, record.threadId) : undefined;
    if (!agent || !thread) return undefined;
    return { agent, policy: policyFromSettings(agent.settings).policy };
  }

  /** Under the thread's lock, before any model call (I5); the one place a check-in becomes fired (I7). */
  private async admit(record: CheckInRecord, policy: AutonomyPolicy, context: RunContext, log: Logger): Promise<Admission> {
    const now = this.deps.clock.now();
    const current = await this.deps.repository.get(record.id);
    if (current?.state !== 'pending') return { admitted: false, reason: 'not_pending' };
    if (!policy.enabled) return this.settle(current, 'autonomy_disabled', log);
    if ((await this.deps.timers.threadState(record.threadId)).paused) return this.settle(current, 'paused', log);
    if (await this.deps.awaitingApproval?.(record.threadId)) return this.settle(current, 'awaiting_approval', log);
    const day = localDayBounds(now, policy.timeZone);
    // A check-in is one promised message, not a silence's follow-up: the per-silence cap does not apply.
    const caps = checkCaps({ ...policy, maxPerSilence: Number.MAX_SAFE_INTEGER }, now, {
      firedThisSilence: 0,
      firedToday: await this.deps.repository.countFiredBetween(record.threadId, day.start.toISOString(), day.end.toISOString()),
    });
    if (!caps.allowed) {
      // Quiet hours wait the check-in out (the agent promised it); other caps skip it.
      if (caps.reason === 'quiet_hours' && policy.quietHours) {
        await this.moveTo(current, endOfQuietHours(now, policy.quietHours, policy.timeZone), 'it came due in quiet hours', log);
        return { admitted: false, reason: 'quiet_hours_deferred' };
      }
      return this.settle(current, caps.reason, log);
    }
    // Marked fired and charged to the budget in one transaction: a person's cancel that wins
    // the race leaves the check-in cancelled and the budget untouched, never a call counted
    // that is not made; a spent budget leaves it pending, to be skipped below.
    const firing = await this.deps.repository.fire(current.id, { runId: context.runId, firedAt: now.toISOString() }, now.toISOString(), (within) =>
      reserveModelCall(this.deps.timers, log, policy, current, now, 'check-in', within),
    );
    if (firing.outcome === 'not_pending') return { admitted: false, reason: 'not_pending' };
    if (firing.outcome === 'refused') return this.settle(current, 'budget', log);
    log.info({ runId: context.runId }, 'check-in fired');
    return { admitted: true };
  }

  private async settle(record: CheckInRecord, reason: string, log: Logger): Promise<Admission> {
    const settled = await this.deps.repository.transition(record.id, 'pending', 'skipped', { stateReason: reason }, this.deps.clock.now().toISOString());
    if (settled) log.info({ reason }, 'check-in skipped');
    return { admitted: false, reason };
  }

  private async moveTo(record: CheckInRecord, dueAt: Date, why: string | null, log: Logger): Promise<void> {
    const moved = await this.deps.repository.transition(record.id, 'pending', 'pending', { dueAt: dueAt.toISOString() }, this.deps.clock.now().toISOString());
    if (!moved) return;
    await this.deps.jobs.schedule({ queue: CHECK_IN_QUEUE, key: record.id, dueAt, payload: { checkInId: record.id } });
    if (why) log.info({ dueAt: moved.dueAt, why }, 'check-in deferred');
  }
}
