import type { Kysely, Selectable } from 'kysely';
import type { FireEnd, FireRecord, FireStatus, ScheduleRecord, ScheduleRepository, ScheduleTarget } from '../../app/schedules/schedule-ports.js';
import type { Iso } from '../../app/ports.js';
import type { MissedPolicy } from '../../domain/schedules/missed-policy.js';
import { scheduleTimingSchema } from '../../domain/schedules/schedule-timing.js';
import type { NullableTimestamp, SqlContext, Timestamp } from './database.js';
import { checkLimit, decodeJson, encodeJson, isoForDatabase, isoFromDatabase, nullableIsoFromDatabase } from './values.js';

interface SchedulesTable {
  id: string;
  user_id: string;
  agent_id: string;
  name: string;
  timing: string;
  target: string;
  thread_id: string | null;
  task: string;
  missed_policy: string;
  enabled: number;
  created_at: Timestamp;
  updated_at: Timestamp;
}

interface ScheduleFiresTable {
  id: string;
  schedule_id: string;
  user_id: string;
  scheduled_for: Timestamp;
  status: string;
  reason: string | null;
  run_id: string | null;
  thread_id: string | null;
  started_at: Timestamp;
  ended_at: NullableTimestamp;
}

export type ScheduleTables = { schedules: SchedulesTable; schedule_fires: ScheduleFiresTable };

export class SqlScheduleRepository implements ScheduleRepository {
  readonly #db: Kysely<ScheduleTables>;

  constructor(context: SqlContext) {
    this.#db = context.db.withTables<ScheduleTables>() as unknown as Kysely<ScheduleTables>;
  }

  async create(schedule: ScheduleRecord): Promise<ScheduleRecord> {
    const row = await this.#db
      .insertInto('schedules')
      .values({
        id: schedule.id,
        user_id: schedule.userId,
        agent_id: schedule.agentId,
        name: schedule.name,
        timing: encodeJson(schedule.timing),
        target: schedule.target,
        thread_id: schedule.threadId,
        task: schedule.task,
        missed_policy: schedule.missedPolicy,
        enabled: schedule.enabled ? 1 : 0,
        created_at: isoForDatabase(schedule.createdAt),
        updated_at: isoForDatabase(schedule.updatedAt),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return toSchedule(row);
  }

  async get(userId: string, id: string): Promise<ScheduleRecord | undefined> {
    const row = await this.#db.selectFrom('schedules').selectAll().where('id', '=', id).where('user_id', '=', userId).executeTakeFirst();
    return row && toSchedule(row);
  }

  async getById(id: string): Promise<ScheduleRecord | undefined> {
    const row = await this.#db.selectFrom('schedules').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toSchedule(row);
  }

  async list(userId: string): Promise<ScheduleRecord[]> {
    const rows = await this.#db.selectFrom('schedules').selectAll().where('user_id', '=', userId).orderBy('created_at').orderBy('id').execute();
    return rows.map(toSchedule);
  }

  async listEnabled(): Promise<ScheduleRecord[]> {
    const rows = await this.#db.selectFrom('schedules').selectAll().where('enabled', '=', 1).orderBy('id').execute();
    return rows.map(toSchedule);
  }

  async update(userId: string, id: string, changes: Partial<Pick<ScheduleRecord, 'name' | 'timing' | 'task' | 'missedPolicy' | 'enabled'>>, now: Iso): Promise<ScheduleRecord | undefined> {
    const row = await this.#db
      .updateTable('schedules')
      .set({
        updated_at: isoForDatabase(now),
        ...(changes.name !== undefined ? { name: changes.name } : {}),
        ...(changes.timing !== undefined ? { timing: encodeJson(changes.timing) } : {}),
        ...(changes.task !== undefined ? { task: changes.task } : {}),
        ...(changes.missedPolicy !== undefined ? { missed_policy: changes.missedPolicy } : {}),
        ...(changes.enabled !== undefined ? { enabled: changes.enabled ? 1 : 0 } : {}),
      })
      .where('id', '=', id)
      .where('user_id', '=', userId)
      .returningAll()
      .executeTakeFirst();
    return row && toSchedule(row);
  }

  async delete(userId: string, id: string): Promise<boolean> {
    const result = await this.#db.deleteFrom('schedules').where('id', '=', id).where('user_id', '=', userId).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  async claimFire(fire: FireRecord): Promise<boolean> {
    // ON CONFLICT DO NOTHING: the unique (schedule_id, scheduled_for) decides, on both
    // backends, which delivery of a fire is the one that runs.
    const row = await this.#db
      .insertInto('schedule_fires')
      .values({
        id: fire.id,
        schedule_id: fire.scheduleId,
        user_id: fire.userId,
        scheduled_for: isoForDatabase(fire.scheduledFor),
        status: fire.status,
        reason: fire.reason,
        run_id: fire.runId,
        thread_id: fire.threadId,
        started_at: isoForDatabase(fire.startedAt),
        ended_at: fire.endedAt === null ? null : isoForDatabase(fire.endedAt),
      })
      .onConflict((conflict) => conflict.columns(['schedule_id', 'scheduled_for']).doNothing())
      .returning('id')
      .executeTakeFirst();
    return row !== undefined;
  }

  async getFire(scheduleId: string, scheduledFor: Iso): Promise<FireRecord | undefined> {
    const row = await this.#db.selectFrom('schedule_fires').selectAll().where('schedule_id', '=', scheduleId).where('scheduled_for', '=', isoForDatabase(scheduledFor)).executeTakeFirst();
    return row && toFire(row);
  }

  async finishFire(id: string, end: FireEnd, options: { onlyIfRunning?: boolean } = {}): Promise<boolean> {
    const result = await this.#db
      .updateTable('schedule_fires')
      .set({
        status: end.status,
        reason: end.reason ?? null,
        ...(end.runId !== undefined ? { run_id: end.runId } : {}),
        ...(end.threadId !== undefined ? { thread_id: end.threadId } : {}),
        ended_at: isoForDatabase(end.endedAt),
      })
      .where('id', '=', id)
      .$if(options.onlyIfRunning === true, (query) => query.where('status', '=', 'running'))
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  async setFireThread(id: string, threadId: string): Promise<void> {
    await this.#db.updateTable('schedule_fires').set({ thread_id: threadId }).where('id', '=', id).execute();
  }

  async latestFire(scheduleId: string): Promise<FireRecord | undefined> {
    const row = await this.#db.selectFrom('schedule_fires').selectAll().where('schedule_id', '=', scheduleId).orderBy('scheduled_for', 'desc').limit(1).executeTakeFirst();
    return row && toFire(row);
  }

  async hasRunningFire(scheduleId: string): Promise<boolean> {
    const row = await this.#db.selectFrom('schedule_fires').select('id').where('schedule_id', '=', scheduleId).where('status', '=', 'running').limit(1).executeTakeFirst();
    return row !== undefined;
  }

  async listFires(userId: string, scheduleId: string, limit: number): Promise<FireRecord[]> {
    const rows = await this.#db
      .selectFrom('schedule_fires')
      .selectAll()
      .where('schedule_id', '=', scheduleId)
      .where('user_id', '=', userId)
      .orderBy('scheduled_for', 'desc')
      .limit(checkLimit(limit))
      .execute();
    return rows.map(toFire);
  }
}

function toSchedule(row: Selectable<SchedulesTable>): ScheduleRecord {
  return {
    id: row.id,
    userId: row.user_id,
    agentId: row.agent_id,
    name: row.name,
    timing: scheduleTimingSchema.parse(decodeJson(row.timing)),
    target: row.target as ScheduleTarget,
    threadId: row.thread_id,
    task: row.task,
    missedPolicy: row.missed_policy as MissedPolicy,
    enabled: Number(row.enabled) === 1,
    createdAt: isoFromDatabase(row.created_at),
    updatedAt: isoFromDatabase(row.updated_at),
  };
}

function toFire(row: Selectable<ScheduleFiresTable>): FireRecord {
  return {
    id: row.id,
    scheduleId: row.schedule_id,
    userId: row.user_id,
    scheduledFor: isoFromDatabase(row.scheduled_for),
    status: row.status as FireStatus,
    reason: row.reason,
    runId: row.run_id,
    threadId: row.thread_id,
    startedAt: isoFromDatabase(row.started_at),
    endedAt: nullableIsoFromDatabase(row.ended_at),
  };
}
