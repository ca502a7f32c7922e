import type { Kysely, Selectable, Transaction } from 'kysely';
import type { AutonomyThreadState, NewTimer, TimerRepository, TimerTransitionFields } from '../../app/autonomy/timer-repository.js';
import type { StorageTransaction } from '../../app/job-queue.js';
import type { Iso } from '../../app/ports.js';
import type { TimerRecord, TimerState } from '../../domain/autonomy/timer.js';
import type { AutonomousTriggerType } from '../../domain/message-metadata.js';
import type { Database, SqlContext } from './database.js';
import type { TimersTable, TimerTables } from './timer-tables.js';
import { checkLimit, isoForDatabase, isoFromDatabase, nullableIsoFromDatabase } from './values.js';

type Db = Kysely<Database & TimerTables>;

/** How often a pending-timer insert is retried after losing a race on the one-pending-per-thread index. */
const UNIQUE_RACE_RETRIES = 3;

/** Timers, autonomy thread state and the model-call budget, on SQLite and PostgreSQL. */
export class SqlTimerRepository implements TimerRepository {
  readonly #context: SqlContext;
  readonly #db: Db;

  constructor(context: SqlContext) {
    this.#context = context;
    this.#db = context.db.withTables<TimerTables>();
  }

  async insert(timer: NewTimer, now: Iso, alsoWithin?: (transaction: StorageTransaction) => Promise<void>): Promise<{ timer: TimerRecord; replaced: TimerRecord[] }> {
    const at = isoForDatabase(now);
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#context.transaction(async (outer) => {
          const trx = outer.withTables<TimerTables>();
          const replaced =
            timer.state === 'pending'
              ? await trx
                  .updateTable('timers')
                  .set({ state: 'cancelled', state_reason: 'replaced by a newer follow-up', updated_at: at })
                  .where('thread_id', '=', timer.threadId)
                  .where('state', '=', 'pending')
                  .returningAll()
                  .execute()
              : [];
          const row = await trx
            .insertInto('timers')
            .values({
              id: timer.id,
              thread_id: timer.threadId,
              user_id: timer.userId,
              agent_id: timer.agentId,
              due_at: isoForDatabase(timer.dueAt),
              trigger_type: timer.triggerType,
              reason: timer.reason,
              attempt: timer.attempt,
              state: timer.state,
              state_reason: timer.stateReason,
              scheduled_against: timer.scheduledAgainst === null ? null : isoForDatabase(timer.scheduledAgainst),
              source_run_id: timer.sourceRunId,
              run_id: null,
              created_at: at,
              updated_at: at,
              fired_at: null,
            })
            .returningAll()
            .executeTakeFirstOrThrow();
          if (alsoWithin) await alsoWithin(outer as unknown as StorageTransaction);
          return { timer: toTimerRecord(row), replaced: replaced.map(toTimerRecord) };
        });
      } catch (error) {
        // Two schedulers of one thread raced past each other's cancel (PostgreSQL, read
        // committed): the loser tries again and now sees, and replaces, the winner's timer.
        if (attempt < UNIQUE_RACE_RETRIES && isUniqueViolation(error)) continue;
        throw error;
      }
    }
  }

  async get(timerId: string): Promise<TimerRecord | undefined> {
    const row = await this.#db.selectFrom('timers').selectAll().where('id', '=', timerId).executeTakeFirst();
    return row === undefined ? undefined : toTimerRecord(row);
  }

  async getForUser(userId: string, timerId: string): Promise<TimerRecord | undefined> {
    const row = await this.#db.selectFrom('timers').selectAll().where('id', '=', timerId).where('user_id', '=', userId).executeTakeFirst();
    return row === undefined ? undefined : toTimerRecord(row);
  }

  async listByThread(userId: string, threadId: string, options: { states?: readonly TimerState[]; limit: number }): Promise<TimerRecord[]> {
    const states = options.states;
    const rows = await this.#db
      .selectFrom('timers')
      .selectAll()
      .where('thread_id', '=', threadId)
      .where('user_id', '=', userId)
      .$if(states !== undefined && states.length > 0, (query) => query.where('state', 'in', [...states!]))
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(checkLimit(options.limit))
      .execute();
    return rows.map(toTimerRecord);
  }

  async listPendingByAgent(userId: string, agentId: string, options: { afterId?: string; limit: number }): Promise<TimerRecord[]> {
    const afterId = options.afterId;
    const rows = await this.#db
      .selectFrom('timers')
      .selectAll()
      .where('agent_id', '=', agentId)
      .where('user_id', '=', userId)
      .where('state', '=', 'pending')
      .$if(afterId !== undefined, (query) => query.where('id', '>', afterId!))
      .orderBy('id')
      .limit(checkLimit(options.limit))
      .execute();
    return rows.map(toTimerRecord);
  }

  async transition(timerId: string, from: TimerState, to: TimerState, fields: TimerTransitionFields, now: Iso): Promise<TimerRecord | undefined> {
    const row = await this.#db
      .updateTable('timers')
      .set({
        state: to,
        updated_at: isoForDatabase(now),
        ...(fields.stateReason !== undefined ? { state_reason: fields.stateReason } : {}),
        ...(fields.runId !== undefined ? { run_id: fields.runId } : {}),
        ...(fields.firedAt !== undefined ? { fired_at: fields.firedAt === null ? null : isoForDatabase(fields.firedAt) } : {}),
      })
      .where('id', '=', timerId)
      .where('state', '=', from)
      .returningAll()
      .executeTakeFirst();
    return row === undefined ? undefined : toTimerRecord(row);
  }

  async reschedule(timerId: string, dueAt: Iso, reason: string, now: Iso, alsoWithin?: (transaction: StorageTransaction) => Promise<void>): Promise<TimerRecord | undefined> {
    return this.#context.transaction(async (outer) => {
      const row = await outer
        .withTables<TimerTables>()
        .updateTable('timers')
        .set({ due_at: isoForDatabase(dueAt), state_reason: reason, updated_at: isoForDatabase(now) })
        .where('id', '=', timerId)
        .where('state', '=', 'pending')
        .returningAll()
        .executeTakeFirst();
      if (row === undefined) return undefined;
      if (alsoWithin) await alsoWithin(outer as unknown as StorageTransaction);
      return toTimerRecord(row);
    });
  }

  async cancelPending(threadId: string, reason: string, now: Iso): Promise<TimerRecord[]> {
    const rows = await this.#db
      .updateTable('timers')
      .set({ state: 'cancelled', state_reason: reason, updated_at: isoForDatabase(now) })
      .where('thread_id', '=', threadId)
      .where('state', '=', 'pending')
      .returningAll()
      .execute();
    return rows.map(toTimerRecord);
  }

  async listOverdue(options: { dueBefore: Iso; firedSince: Iso; firedBefore: Iso; limit: number }): Promise<TimerRecord[]> {
    const limit = checkLimit(options.limit);
    const pending = await this.#db
      .selectFrom('timers')
      .selectAll()
      .where('state', '=', 'pending')
      .where('due_at', '<', isoForDatabase(options.dueBefore))
      .orderBy('due_at')
      .limit(limit)
      .execute();
    const fired = await this.#db
      .selectFrom('timers')
      .leftJoin('runs', 'runs.id', 'timers.run_id')
      .selectAll('timers')
      .where('timers.state', '=', 'fired')
      .where('timers.fired_at', '>=', isoForDatabase(options.firedSince))
      .where('timers.fired_at', '<', isoForDatabase(options.firedBefore))
      .where((eb) => eb.or([eb('runs.id', 'is', null), eb('runs.status', '=', 'running')]))
      .orderBy('timers.fired_at')
      .limit(limit)
      .execute();
    return [...pending, ...fired].map(toTimerRecord);
  }

  async countFiredInSilence(threadId: string, scheduledAgainst: Iso | null): Promise<number> {
    const row = await this.#db
      .selectFrom('timers')
      .select((eb) => eb.fn.countAll<number | string>().as('count'))
      .where('thread_id', '=', threadId)
      .where('state', '=', 'fired')
      .where((eb) => (scheduledAgainst === null ? eb('scheduled_against', 'is', null) : eb('scheduled_against', '=', isoForDatabase(scheduledAgainst))))
      .executeTakeFirstOrThrow();
    return Number(row.count);
  }

  async countFiredBetween(threadId: string, from: Iso, to: Iso): Promise<number> {
    const row = await this.#db
      .selectFrom('timers')
      .select((eb) => eb.fn.countAll<number | string>().as('count'))
      .where('thread_id', '=', threadId)
      .where('state', '=', 'fired')
      .where('fired_at', '>=', isoForDatabase(from))
      .where('fired_at', '<', isoForDatabase(to))
      .executeTakeFirstOrThrow();
    return Number(row.count);
  }

  async threadState(threadId: string): Promise<AutonomyThreadState> {
    const row = await this.#db.selectFrom('autonomy_threads').select(['paused', 'last_user_message_at']).where('thread_id', '=', threadId).executeTakeFirst();
    return { paused: Number(row?.paused ?? 0) === 1, lastUserMessageAt: row ? nullableIsoFromDatabase(row.last_user_message_at) : null };
  }

  async setPaused(threadId: string, userId: string, paused: boolean, now: Iso): Promise<void> {
    const at = isoForDatabase(now);
    await this.#db
      .insertInto('autonomy_threads')
      .values({ thread_id: threadId, user_id: userId, paused: paused ? 1 : 0, last_user_message_at: null, updated_at: at })
      .onConflict((conflict) => conflict.column('thread_id').doUpdateSet({ paused: paused ? 1 : 0, updated_at: at }))
      .execute();
  }

  async noteUserMessage(threadId: string, userId: string, at: Iso): Promise<void> {
    const when = isoForDatabase(at);
    await this.#db
      .insertInto('autonomy_threads')
      .values({ thread_id: threadId, user_id: userId, paused: 0, last_user_message_at: when, updated_at: when })
      .onConflict((conflict) =>
        conflict
          .column('thread_id')
          .doUpdateSet({ last_user_message_at: when, updated_at: when })
          .where((eb) => eb.or([eb('autonomy_threads.last_user_message_at', 'is', null), eb('autonomy_threads.last_user_message_at', '<', when)])),
      )
      .execute();
  }

  async reserveModelCalls(userId: string, agentId: string, day: string, count: number, limit: number, options: { within?: StorageTransaction } = {}): Promise<boolean> {
    // In the caller's transaction when given one: what it is reserved for commits, or rolls back, with it.
    const db: Db = options.within ? kyselyTransactionOf(options.within).withTables<TimerTables>() : this.#db;
    await db
      .insertInto('autonomy_usage')
      .values({ user_id: userId, agent_id: agentId, day, model_calls: 0 })
      .onConflict((conflict) => conflict.columns(['user_id', 'agent_id', 'day']).doNothing())
      .execute();
    // One conditional UPDATE: concurrent reservations (other threads, other instances)
    // can never together exceed the limit.
    const result = await db
      .updateTable('autonomy_usage')
      .set((eb) => ({ model_calls: eb('model_calls', '+', count) }))
      .where('user_id', '=', userId)
      .where('agent_id', '=', agentId)
      .where('day', '=', day)
      .where((eb) => eb(eb('model_calls', '+', count), '<=', limit))
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  async modelCallsUsed(userId: string, agentId: string, day: string): Promise<number> {
    const row = await this.#db
      .selectFrom('autonomy_usage')
      .select('model_calls')
      .where('user_id', '=', userId)
      .where('agent_id', '=', agentId)
      .where('day', '=', day)
      .executeTakeFirst();
    return Number(row?.model_calls ?? 0);
  }
}

/** The Kysely transaction behind an opaque StorageTransaction (adapters only). */
export function kyselyTransactionOf(transaction: StorageTransaction): Transaction<Database> {
  return transaction as unknown as Transaction<Database>;
}

function isUniqueViolation(error: unknown): boolean {
  const record = error as { code?: unknown; message?: unknown } | null;
  return record?.code === '23505' || (typeof record?.message === 'string' && record.message.includes('UNIQUE constraint failed'));
}

function toTimerRecord(row: Selectable<TimersTable>): TimerRecord {
  return {
    id: row.id,
    threadId: row.thread_id,
    userId: row.user_id,
    agentId: row.agent_id,
    dueAt: isoFromDatabase(row.due_at),
    triggerType: row.trigger_type as AutonomousTriggerType,
    reason: row.reason,
    attempt: Number(row.attempt),
    state: row.state as TimerState,
    stateReason: row.state_reason,
    scheduledAgainst: nullableIsoFromDatabase(row.scheduled_against),
    sourceRunId: row.source_run_id,
    runId: row.run_id,
    createdAt: isoFromDatabase(row.created_at),
    updatedAt: isoFromDatabase(row.updated_at),
    firedAt: nullableIsoFromDatabase(row.fired_at),
  };
}
