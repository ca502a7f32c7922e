import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { VigilError } from '../../domain/errors.js';
import type { MissedPolicy } from '../../domain/schedules/missed-policy.js';
import { nextFireAfter, type ScheduleTiming } from '../../domain/schedules/schedule-timing.js';
import type { AgentService } from '../agent-service.js';
import type { ConversationService } from '../conversation-service.js';
import type { JobQueue } from '../job-queue.js';
import type { Clock } from '../ports.js';
import type { FireRecord, ScheduleRecord, ScheduleRepository, ScheduleTarget } from './schedule-ports.js';

export const SCHEDULE_QUEUE = 'schedule';

export interface CreateScheduleInput {
  name: string;
  timing: ScheduleTiming;
  agentId?: string | undefined;
  target: ScheduleTarget;
  threadId?: string | undefined;
  task: string;
  missedPolicy: MissedPolicy;
  enabled: boolean;
}

export type UpdateScheduleInput = Partial<Pick<CreateScheduleInput, 'name' | 'timing' | 'task' | 'missedPolicy' | 'enabled'>>;

/**
 * Schedules: cron or one-shot, owned by a user. Each enabled schedule has exactly one
 * pending job on the job queue, for its next fire; the job's key names the fire time, so
 * every instance arming the same fire arms one job.
 */
export class ScheduleService {
  constructor(
    private readonly schedules: ScheduleRepository,
    private readonly jobs: JobQueue,
    private readonly agents: AgentService,
    private readonly conversations: ConversationService,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  async create(userId: string, input: CreateScheduleInput): Promise<ScheduleRecord> {
    if (input.enabled) this.assertWillFire(input.timing);
    // Everything that can refuse comes before the default agent is made (I11: a refused
    // request leaves nothing behind). On a thread, the agent is the thread's, as for hooks.
    let threadId: string | null = null;
    let agentId = input.agentId;
    if (input.target === 'thread') {
      if (!input.threadId) throw new VigilError('VALIDATION_FAILED', 'threadId is required when target is "thread"');
      const thread = await this.conversations.getThread(userId, input.threadId);
      if (agentId !== undefined && thread.agentId !== agentId) throw new VigilError('VALIDATION_FAILED', `thread ${thread.id} belongs to agent "${thread.agentId}", not "${agentId}"`);
      threadId = thread.id;
      agentId = thread.agentId;
    } else if (input.threadId) throw new VigilError('VALIDATION_FAILED', 'threadId is only allowed when target is "thread"');
    const agent = agentId ? await this.agents.get(userId, agentId) : await this.agents.getOrCreateDefault(userId);
    const now = this.clock.now().toISOString();
    const schedule = await this.schedules.create({
      id: randomUUID(),
      userId,
      agentId: agent.id,
      name: input.name,
      timing: input.timing,
      target: input.target,
      threadId,
      task: input.task,
      missedPolicy: input.missedPolicy,
      enabled: input.enabled,
      createdAt: now,
      updatedAt: now,
    });
    if (schedule.enabled) await this.arm(schedule, this.clock.now());
    return schedule;
  }

  list(userId: string): Promise<ScheduleRecord[]> {
    return this.schedules.list(userId);
  }

  async get(userId: string, id: string): Promise<ScheduleRecord> {
    const schedule = await this.schedules.get(userId, id);
    if (!schedule) throw new VigilError('SCHEDULE_NOT_FOUND', `no schedule "${id}"`);
    return schedule;
  }

  async update(userId: string, id: string, changes: UpdateScheduleInput): Promise<ScheduleRecord> {
    const current = await this.get(userId, id);
    // Only a change of timing or a switch on is checked: a one-shot that has fired keeps its past instant, and may be renamed.
    if ((changes.timing !== undefined || changes.enabled === true) && (changes.enabled ?? current.enabled)) this.assertWillFire(changes.timing ?? current.timing);
    const updated = await this.schedules.update(userId, id, changes, this.clock.now().toISOString());
    if (!updated) throw new VigilError('SCHEDULE_NOT_FOUND', `no schedule "${id}"`);
    // A job armed before the change carries the old version and is ignored when it comes due.
    if (updated.enabled) await this.arm(updated, this.clock.now());
    return updated;
  }

  /** An enabled schedule whose timing has no fire after now would never run (nor record a missed fire): refused, nothing stored. */
  private assertWillFire(timing: ScheduleTiming): void {
    if (nextFireAfter(timing, this.clock.now())) return;
    throw new VigilError(
      'VALIDATION_FAILED',
      timing.kind === 'at' ? `timing.at ${timing.at} is not in the future: the schedule would never fire` : `timing.cron "${timing.cron}" matches no date from now on: the schedule would never fire`,
    );
  }

  async delete(userId: string, id: string): Promise<void> {
    if (!(await this.schedules.delete(userId, id))) throw new VigilError('SCHEDULE_NOT_FOUND', `no schedule "${id}"`);
  }

  async fires(userId: string, id: string, limit: number): Promise<FireRecord[]> {
    await this.get(userId, id);
    return this.schedules.listFires(userId, id, limit);
  }

  /**
   * At start-up, make sure each enabled schedule has its next fire armed. A fire that came
   * due while no server ran is armed for now, and the missed-run policy decides at fire
   * time whether it runs; several missed fires collapse into that one.
   */
  async recover(): Promise<void> {
    const now = this.clock.now();
    for (const schedule of await this.schedules.listEnabled()) {
      const latest = await this.schedules.latestFire(schedule.id);
      const base = new Date(latest && latest.scheduledFor > schedule.updatedAt ? latest.scheduledFor : schedule.updatedAt);
      const next = nextFireAfter(schedule.timing, base);
      if (!next) continue;
      if (next.getTime() <= now.getTime()) {
        this.logger.info({ scheduleId: schedule.id, scheduledFor: next.toISOString() }, 'schedule fire came due while the server was down');
        await this.armFire(schedule, next, now);
      } else await this.armFire(schedule, next, next);
    }
  }

  /** Arm the first fire strictly after `after`. */
  async arm(schedule: ScheduleRecord, after: Date): Promise<void> {
    const next = nextFireAfter(schedule.timing, after);
    if (next) await this.armFire(schedule, next, next);
  }

  private async armFire(schedule: ScheduleRecord, scheduledFor: Date, dueAt: Date): Promise<void> {
    const { created } = await this.jobs.schedule({
      queue: SCHEDULE_QUEUE,
      // The version is part of the key: an edit that keeps the timing arms a job of its own,
      // where the job armed before (same key, old version, ignored when due) kept its place
      // and the schedule never fired again. A fire's claim is still one per occurrence.
      key: `${schedule.id}@${scheduledFor.toISOString()}@${schedule.updatedAt}`,
      dueAt,
      payload: { scheduleId: schedule.id, scheduledFor: scheduledFor.toISOString(), version: schedule.updatedAt },
    });
    if (created) this.logger.debug({ scheduleId: schedule.id, scheduledFor: scheduledFor.toISOString() }, 'schedule fire armed');
  }
}
