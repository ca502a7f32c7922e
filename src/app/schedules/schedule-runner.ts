import { randomUUID } from 'node:crypto';
import { HumanMessage } from '@langchain/core/messages';
import type { Logger } from 'pino';
import { z } from 'zod';
import { isMissed } from '../../domain/schedules/missed-policy.js';
import { isVigilError } from '../../domain/errors.js';
import type { ConversationService } from '../conversation-service.js';
import { RetryLater, type DueJob } from '../job-queue.js';
import type { Clock, RunRecord, RunRepository } from '../ports.js';
import { endedByDeadProcess } from '../runs/orphaned-run-sweeper.js';
import type { FireEnd, FireRecord, ScheduleRecord, ScheduleRepository } from './schedule-ports.js';
import type { ScheduleService } from './schedule-service.js';

const firePayloadSchema = z.object({ scheduleId: z.string(), scheduledFor: z.iso.datetime(), version: z.string() });

/** A fire still marked running after this long is taken as interrupted, not in progress, unless its run is alive. */
export const STALE_FIRE_MS = 30 * 60_000;

/** The reason of a fire whose process ended before it did (the stale-fire rule says the same). */
export const INTERRUPTED_FIRE_REASON = 'interrupted';

/**
 * How long a claimed fire may be without its run before a new delivery calls it
 * interrupted. A job is delivered again only when its first delivery stopped renewing its
 * claim (its process died, or stalled for seconds); this covers the stall.
 */
const UNRECORDED_RUN_GRACE_MS = 30_000;

export interface ScheduleRunnerDeps {
  schedules: ScheduleRepository;
  service: ScheduleService;
  conversations: ConversationService;
  runs: RunRepository;
  /** Ends a run still marked running whose thread lock is free (the orphaned-run sweep's check); true when it did. */
  endOrphanedRun(run: RunRecord): Promise<boolean>;
  clock: Clock;
  logger: Logger;
  missedGraceMs: number;
}

/**
 * Runs one schedule fire. In order: arm the next fire (so a failing run never stops the
 * schedule), claim this fire (at most once, I7), apply the missed-run policy and the
 * no-overlap rule, then start a cron run on the target thread and record its outcome.
 *
 * A fire's job delivered again finds the fire claimed: its first delivery died (the queue
 * hands out a dead process's job once its claim lapses) or is still at work. The fire is
 * then settled from what its run became, and never run a second time (I7): a run ended
 * (by its process, or by the orphaned-run sweep) gives the fire its end; a run still
 * `running` whose thread lock is free is ended here as the sweep would; a live one is left
 * alone and the delivery retried later; a fire whose run was never recorded failed.
 */
export class ScheduleRunner {
  constructor(private readonly deps: ScheduleRunnerDeps) {}

  async fire(job: DueJob): Promise<void> {
    const { schedules, service, clock, logger, missedGraceMs } = this.deps;
    const payload = firePayloadSchema.safeParse(job.payload);
    if (!payload.success) {
      logger.error({ jobId: job.id, issues: payload.error.issues }, 'schedule job with an unreadable payload dropped');
      return;
    }
    const { scheduleId, scheduledFor, version } = payload.data;
    const log = logger.child({ scheduleId, scheduledFor });
    const schedule = await schedules.getById(scheduleId);
    if (!schedule) return log.debug('schedule fire ignored: the schedule was deleted');
    // Before the version check: a fire claimed before the schedule changed is still settled.
    const claimedBefore = await schedules.getFire(scheduleId, scheduledFor);
    if (claimedBefore) return this.recover(claimedBefore, log.child({ fireId: claimedBefore.id, delivery: job.attempt }));
    if (!schedule.enabled || schedule.updatedAt !== version) {
      log.debug('schedule fire ignored: the schedule was disabled or changed since it was armed');
      return;
    }
    const now = clock.now();
    await service.arm(schedule, new Date(Math.max(now.getTime(), Date.parse(scheduledFor))));

    const overlapping = await this.overlapping(schedule, now);
    const fireId = randomUUID();
    const runId = randomUUID();
    const claimed = await schedules.claimFire({ id: fireId, scheduleId, userId: schedule.userId, scheduledFor, status: 'running', reason: null, runId, threadId: schedule.threadId, startedAt: now.toISOString(), endedAt: null });
    if (!claimed) {
      log.info('schedule fire already handled elsewhere');
      return;
    }
    if (isMissed(new Date(scheduledFor), now, missedGraceMs) && schedule.missedPolicy === 'skip') {
      log.info({ policy: 'skip' }, 'schedule fire missed during downtime: skipped');
      await schedules.finishFire(fireId, { status: 'skipped', reason: 'missed', runId: null, endedAt: now.toISOString() });
      return;
    }
    if (overlapping) {
      log.info('schedule fire skipped: the previous fire is still running');
      await schedules.finishFire(fireId, { status: 'skipped', reason: 'overlap', runId: null, endedAt: now.toISOString() });
      return;
    }
    await this.run(schedule, { fireId, runId, scheduledFor }, log);
  }

  private async overlapping(schedule: ScheduleRecord, now: Date): Promise<boolean> {
    const { schedules, runs } = this.deps;
    if (!(await schedules.hasRunningFire(schedule.id))) return false;
    const latest = await schedules.latestFire(schedule.id);
    if (latest?.status !== 'running' || now.getTime() - Date.parse(latest.startedAt) <= STALE_FIRE_MS) return true;
    // Long past its start: interrupted, unless its run is alive (a long planner run holds its
    // thread), which the run's own state says, not the time. Its process died: the run is ended
    // as the sweep would, and the fire with it.
    const run = latest.runId ? await runs.get(latest.userId, latest.runId) : undefined;
    if (run?.status === 'running' && !(await this.deps.endOrphanedRun(run))) return true;
    await schedules.finishFire(latest.id, { status: 'failed', reason: INTERRUPTED_FIRE_REASON, endedAt: now.toISOString() });
    return false;
  }

  private async run(schedule: ScheduleRecord, fire: { fireId: string; runId: string; scheduledFor: string }, log: Logger): Promise<void> {
    const { schedules, conversations, runs, clock } = this.deps;
    const { fireId, runId, scheduledFor } = fire;
    let threadId: string | null = schedule.threadId;
    try {
      if (schedule.target === 'new_thread') {
        threadId = (await conversations.createThread(schedule.userId, { agentId: schedule.agentId, title: `${schedule.name} · ${scheduledFor}` })).id;
        // Named now, not at the fire's end: a person watching the schedule can open the run in progress.
        await schedules.setFireThread(fireId, threadId);
      }
      const input = new HumanMessage({
        content: schedule.task,
        additional_kwargs: { synthetic: true, trigger_type: 'cron', trigger_reason: `schedule "${schedule.name}"`, schedule_id: schedule.id, fire_id: fireId },
      });
      const outcome = await conversations.runTriggered(schedule.userId, threadId!, {
        trigger: 'cron',
        input,
        meta: { schedule_id: schedule.id, fire_id: fireId, scheduled_for_utc: scheduledFor },
        correlationId: fireId,
        runId,
      });
      await schedules.finishFire(fireId, { ...fireEndOf(outcome.run), threadId, endedAt: clock.now().toISOString() });
      log.info({ fireId, runId: outcome.run.id, status: outcome.run.status }, 'schedule fired');
    } catch (error) {
      log.error({ err: error, fireId }, 'schedule fire failed');
      // The thread waits for a person's decision: this fire is skipped, with its reason (I16).
      const waiting = isVigilError(error) && error.code === 'THREAD_AWAITING_APPROVAL';
      const recorded = await runs.get(schedule.userId, runId).catch(() => undefined);
      await schedules.finishFire(fireId, {
        status: waiting ? 'skipped' : 'failed',
        reason: waiting ? 'awaiting_approval' : isVigilError(error) ? error.code : 'INTERNAL',
        runId: recorded ? runId : null,
        threadId,
        endedAt: clock.now().toISOString(),
      });
    }
  }

  /** A fire already claimed, delivered again: settle it from its run, never run it twice (I7). */
  private async recover(fire: FireRecord, log: Logger): Promise<void> {
    if (fire.status !== 'running') return log.info({ status: fire.status }, 'schedule fire already handled');
    const { schedules, runs, clock } = this.deps;
    let run = fire.runId ? await runs.get(fire.userId, fire.runId) : undefined;
    if (run?.status === 'running') {
      // Still marked running: orphaned if its thread lock is free (its process died), alive otherwise.
      await this.deps.endOrphanedRun(run);
      run = await runs.get(run.userId, run.id);
      if (run?.status === 'running') throw new RetryLater('the schedule fire\'s run is still running; its delivery will be retried later');
    }
    if (!run && clock.now().getTime() - Date.parse(fire.startedAt) < UNRECORDED_RUN_GRACE_MS) {
      // Claimed moments ago: its first delivery may still be on its way to its run.
      throw new RetryLater('the schedule fire has no run yet; its delivery will be retried later');
    }
    const end: FireEnd = run
      ? { ...fireEndOf(run), runId: run.id, threadId: run.threadId, endedAt: run.endedAt ?? clock.now().toISOString() }
      : // Claimed, but its process ended before its run was recorded: nothing ran; it is not run now either.
        { status: 'failed', reason: INTERRUPTED_FIRE_REASON, runId: null, endedAt: clock.now().toISOString() };
    if (await schedules.finishFire(fire.id, end, { onlyIfRunning: true })) {
      log.warn({ runId: end.runId, status: end.status, reason: end.reason }, 'a schedule fire whose process ended was settled from its run');
    }
  }
}

/** What a fire records from its run's end (the same whether its own process or a recovery records it). */
function fireEndOf(run: RunRecord): Pick<FireEnd, 'status' | 'reason' | 'runId'> {
  // A run that stopped to wait for a person's approval fired: the fire is done, its run waits (I16).
  if (run.status === 'interrupted') return { status: 'succeeded', reason: 'its run waits for an approval', runId: run.id };
  if (run.status === 'succeeded') return { status: 'succeeded', reason: null, runId: run.id };
  if (endedByDeadProcess(run)) return { status: 'failed', reason: INTERRUPTED_FIRE_REASON, runId: run.id };
  return { status: 'failed', reason: run.errorCode ?? run.status, runId: run.id };
}
