import type { MissedPolicy } from '../../domain/schedules/missed-policy.js';
import type { ScheduleTiming } from '../../domain/schedules/schedule-timing.js';
import type { Iso } from '../ports.js';

export type ScheduleTarget = 'thread' | 'new_thread';

export interface ScheduleRecord {
  id: string;
  userId: string;
  agentId: string;
  name: string;
  timing: ScheduleTiming;
  target: ScheduleTarget;
  /** The thread every fire runs on when target is 'thread'. */
  threadId: string | null;
  /** The task the agent is given at each fire. */
  task: string;
  missedPolicy: MissedPolicy;
  enabled: boolean;
  createdAt: Iso;
  updatedAt: Iso;
}

export type FireStatus = 'running' | 'succeeded' | 'failed' | 'skipped';

export interface FireRecord {
  id: string;
  scheduleId: string;
  userId: string;
  scheduledFor: Iso;
  status: FireStatus;
  /** Why it was skipped or failed: 'missed', 'overlap', an error code. */
  reason: string | null;
  /** The fire's run: chosen when the fire is claimed, so a fire whose process died still names it. */
  runId: string | null;
  threadId: string | null;
  startedAt: Iso;
  endedAt: Iso | null;
}

export interface FireEnd {
  status: Exclude<FireStatus, 'running'>;
  reason?: string | null;
  runId?: string | null;
  threadId?: string | null;
  endedAt: Iso;
}

export interface ScheduleRepository {
  create(schedule: ScheduleRecord): Promise<ScheduleRecord>;
  get(userId: string, id: string): Promise<ScheduleRecord | undefined>;
  /** Any user's schedule, for the fire handler (which acts for the schedule's owner). */
  getById(id: string): Promise<ScheduleRecord | undefined>;
  list(userId: string): Promise<ScheduleRecord[]>;
  listEnabled(): Promise<ScheduleRecord[]>;
  update(userId: string, id: string, changes: Partial<Pick<ScheduleRecord, 'name' | 'timing' | 'task' | 'missedPolicy' | 'enabled'>>, now: Iso): Promise<ScheduleRecord | undefined>;
  delete(userId: string, id: string): Promise<boolean>;
  /**
   * Claim a fire: insert its row. False when a row for (schedule, scheduledFor) exists —
   * another instance or an earlier delivery has it (at most once, I7).
   */
  claimFire(fire: FireRecord): Promise<boolean>;
  /** The fire of (schedule, scheduledFor), if one was claimed. */
  getFire(scheduleId: string, scheduledFor: Iso): Promise<FireRecord | undefined>;
  /**
   * Record a fire's end. With `onlyIfRunning`, only a fire still `running` is changed (a
   * recovery never overwrites an end its own runner recorded); false when nothing changed.
   */
  finishFire(id: string, end: FireEnd, options?: { onlyIfRunning?: boolean }): Promise<boolean>;
  /** Name the thread a fire runs on once it exists (a new thread per fire is created after the claim). */
  setFireThread(id: string, threadId: string): Promise<void>;
  /** The latest fire of a schedule (by scheduled time), if any. */
  latestFire(scheduleId: string): Promise<FireRecord | undefined>;
  /** Whether a fire of this schedule is still running (no overlap). */
  hasRunningFire(scheduleId: string): Promise<boolean>;
  listFires(userId: string, scheduleId: string, limit: number): Promise<FireRecord[]>;
}
