import { randomUUID } from 'node:crypto';
import { HumanMessage } from '@langchain/core/messages';
import type { Logger } from 'pino';
import { z } from 'zod';
import { isMissed } from '../../domain/schedules/missed-policy.js';
import { isVigilError } from '../../domain/errors.js';
import type { ConversationService } from '../conversation-service.js';
import type { DueJob } from '../job-queue.js';
import type { Clock } from '../ports.js';
import type { ScheduleRecord, ScheduleRepository } from './schedule-ports.js';
import type { ScheduleService } from './schedule-service.js';

const firePayloadSchema = z.object({ scheduleId: z.string(), scheduledFor: z.iso.datetime(), version: z.string() });

/** A fire still marked running after this long is taken as interrupted, not in progress. */
export const STALE_FIRE_MS = 30 * 60_000;

/**
 * Runs one schedule fire. In order: arm the next fire (so a failing run never stops the
 * schedule), claim this fire (at most once, I7), apply the missed-run policy and the
 * no-overlap rule, then start a cron run on the target thread and record its outcome.
 */
export class ScheduleRunner {
  constructor(
    private readonly schedules: ScheduleRepository,
    private readonly service: ScheduleService,
    private readonly conversations: ConversationService,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly missedGraceMs: number,
  ) {}

  async fire(job: DueJob): Promise<void> {
    const payload = firePayloadSchema.safeParse(job.payload);
    if (!payload.success) {
      this.logger.error({ jobId: job.id, issues: payload.error.issues }, 'schedule job with an unreadable payload dropped');
      return;
    }
    const { scheduleId, scheduledFor, version } = payload.data;
    const log = this.logger.child({ scheduleId, scheduledFor });
    const schedule = await this.schedules.getById(scheduleId);
    if (!schedule || !schedule.enabled || schedule.updatedAt !== version) {
      log.debug('schedule fire ignored: the schedule was deleted, disabled or changed since it was armed');
      return;
    }
    const now = this.clock.now();
    await this.service.arm(schedule, new Date(Math.max(now.getTime(), Date.parse(scheduledFor))));

    const overlapping = await this.overlapping(schedule, now);
    const fireId = randomUUID();
    const claimed = await this.schedules.claimFire({
      id: fireId,
      scheduleId,
      userId: schedule.userId,
      scheduledFor,
      status: 'running',
      reason: null,
      runId: null,
      threadId: null,
      startedAt: now.toISOString(),
      endedAt: null,
    });
    if (!claimed) {
      log.info('schedule fire already handled elsewhere');
      return;
    }
    if (isMissed(new Date(scheduledFor), now, this.missedGraceMs) && schedule.missedPolicy === 'skip') {
      log.info({ policy: 'skip' }, 'schedule fire missed during downtime: skipped');
      await this.schedules.finishFire(fireId, { status: 'skipped', reason: 'missed', endedAt: now.toISOString() });
      return;
    }
    if (overlapping) {
      log.info('schedule fire skipped: the previous fire is still running');
      await this.schedules.finishFire(fireId, { status: 'skipped', reason: 'overlap', endedAt: now.toISOString() });
      return;
    }
    await this.run(schedule, fireId, scheduledFor, log);
  }

  private async overlapping(schedule: ScheduleRecord, now: Date): Promise<boolean> {
    if (!(await this.schedules.hasRunningFire(schedule.id))) return false;
    const latest = await this.schedules.latestFire(schedule.id);
    if (latest?.status === 'running' && now.getTime() - Date.parse(latest.startedAt) > STALE_FIRE_MS) {
      await this.schedules.finishFire(latest.id, { status: 'failed', reason: 'interrupted', endedAt: now.toISOString() });
      return false;
    }
    return true;
  }

  private async run(schedule: ScheduleRecord, fireId: string, scheduledFor: string, log: Logger): Promise<void> {
    let threadId: string | null = schedule.threadId;
    try {
      if (schedule.target === 'new_thread') {
        threadId = (await this.conversations.createThread(schedule.userId, { agentId: schedule.agentId, title: `${schedule.name} · ${scheduledFor}` })).id;
      }
      const input = new HumanMessage({
        content: schedule.task,
        additional_kwargs: { synthetic: true, trigger_type: 'cron', trigger_reason: `schedule "${schedule.name}"`, schedule_id: schedule.id, fire_id: fireId },
      });
      const outcome = await this.conversations.runTriggered(schedule.userId, threadId!, {
        trigger: 'cron',
        input,
        meta: { schedule_id: schedule.id, fire_id: fireId, scheduled_for_utc: scheduledFor },
        correlationId: fireId,
      });
      // A run that stopped to wait for a person's approval fired: the fire is done, its run waits (I16).
      const interrupted = outcome.run.status === 'interrupted';
      const succeeded = outcome.run.status === 'succeeded' || interrupted;
      await this.schedules.finishFire(fireId, {
        status: succeeded ? 'succeeded' : 'failed',
        reason: interrupted ? 'its run waits for an approval' : succeeded ? null : (outcome.run.errorCode ?? outcome.run.status),
        runId: outcome.run.id,
        threadId,
        endedAt: this.clock.now().toISOString(),
      });
      log.info({ fireId, runId: outcome.run.id, status: outcome.run.status }, 'schedule fired');
    } catch (error) {
      log.error({ err: error, fireId }, 'schedule fire failed');
      // The thread waits for a person's decision: this fire is skipped, with its reason (I16).
      const waiting = isVigilError(error) && error.code === 'THREAD_AWAITING_APPROVAL';
      await this.schedules.finishFire(fireId, { status: waiting ? 'skipped' : 'failed', reason: waiting ? 'awaiting_approval' : isVigilError(error) ? error.code : 'INTERNAL', threadId, endedAt: this.clock.now().toISOString() });
    }
  }
}
