import type { Kysely, Selectable } from 'kysely';
import type { CheckInFiring, CheckInRecord, CheckInRepository, CheckInState, NewCheckIn } from '../../app/check-ins/check-in-ports.js';
import type { StorageTransaction } from '../../app/job-queue.js';
import type { NullableTimestamp, SqlContext, Timestamp } from './database.js';
import { checkLimit, isoForDatabase, isoFromDatabase, nullableIsoFromDatabase } from './values.js';

interface CheckInsTable {
  id: string;
  user_id: string;
  agent_id: string;
  thread_id: string;
  due_at: Timestamp;
  reason: string;
  set_at: Timestamp;
  set_by_run_id: string | null;
  state: string;
  state_reason: string | null;
  run_id: string | null;
  fired_at: NullableTimestamp;
  updated_at: Timestamp;
}

export type CheckInTables = { check_ins: CheckInsTable };

/** Thrown inside `fire`'s transaction to roll it back when `alsoWithin` refuses. */
class FiringRefused extends Error {}

export class SqlCheckInRepository implements CheckInRepository {
  readonly #context: SqlContext;
  readonly #db: Kysely<CheckInTables>;

  constructor(context: SqlContext) {
    this.#context = context;
    this.#db = context.db.withTables<CheckInTables>() as unknown as Kysely<CheckInTables>;
  }

  async create(checkIn: NewCheckIn, alsoWithin: (transaction: StorageTransaction) => Promise<void>): Promise<CheckInRecord> {
    return this.#context.transaction(async (transaction) => {
      const row = await (transaction.withTables<CheckInTables>() as unknown as Kysely<CheckInTables>)
        .insertInto('check_ins')
        .values({
          id: checkIn.id,
          user_id: checkIn.userId,
          agent_id: checkIn.agentId,
          thread_id: checkIn.threadId,
          due_at: isoForDatabase(checkIn.dueAt),
          reason: checkIn.reason,
          set_at: isoForDatabase(checkIn.setAt),
          set_by_run_id: checkIn.setByRunId,
          state: 'pending',
          updated_at: isoForDatabase(checkIn.setAt),
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      await alsoWithin(transaction as unknown as StorageTransaction);
      return toCheckIn(row);
    });
  }

  async get(id: string): Promise<CheckInRecord | undefined> {
    const row = await this.#db.selectFrom('check_ins').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toCheckIn(row);
  }

  async listByThread(userId: string, threadId: string, options: { pendingOnly: boolean; limit: number }): Promise<CheckInRecord[]> {
    let query = this.#db.selectFrom('check_ins').selectAll().where('user_id', '=', userId).where('thread_id', '=', threadId);
    if (options.pendingOnly) query = query.where('state', '=', 'pending');
    const rows = await query.orderBy('due_at').orderBy('id').limit(checkLimit(options.limit)).execute();
    return rows.map(toCheckIn);
  }

  async transition(id: string, from: CheckInState, to: CheckInState, fields: { stateReason?: string | null; runId?: string | null; firedAt?: string | null; dueAt?: string }, now: string): Promise<CheckInRecord | undefined> {
    const row = await this.#db
      .updateTable('check_ins')
      .set({
        state: to,
        updated_at: isoForDatabase(now),
        ...(fields.stateReason !== undefined ? { state_reason: fields.stateReason } : {}),
        ...(fields.runId !== undefined ? { run_id: fields.runId } : {}),
        ...(fields.firedAt !== undefined ? { fired_at: fields.firedAt === null ? null : isoForDatabase(fields.firedAt) } : {}),
        ...(fields.dueAt !== undefined ? { due_at: isoForDatabase(fields.dueAt) } : {}),
      })
      .where('id', '=', id)
      .where('state', '=', from)
      .returningAll()
      .executeTakeFirst();
    return row && toCheckIn(row);
  }

  async fire(id: string, fields: { runId: string; firedAt: string }, now: string, alsoWithin: (transaction: StorageTransaction) => Promise<boolean>): Promise<CheckInFiring> {
    try {
      return await this.#context.transaction(async (transaction): Promise<CheckInFiring> => {
        // The conditional update first: it holds the row until commit, so a cancel waits
        // for this transaction and then finds the check-in fired (or, rolled back, pending).
        const row = await (transaction.withTables<CheckInTables>() as unknown as Kysely<CheckInTables>)
          .updateTable('check_ins')
          .set({ state: 'fired', run_id: fields.runId, fired_at: isoForDatabase(fields.firedAt), state_reason: null, updated_at: isoForDatabase(now) })
          .where('id', '=', id)
          .where('state', '=', 'pending')
          .returningAll()
          .executeTakeFirst();
        if (!row) return { outcome: 'not_pending' };
        if (!(await alsoWithin(transaction as unknown as StorageTransaction))) throw new FiringRefused();
        return { outcome: 'fired', checkIn: toCheckIn(row) };
      });
    } catch (error) {
      if (error instanceof FiringRefused) return { outcome: 'refused' };
      throw error;
    }
  }

  async countFiredBetween(threadId: string, from: string, to: string): Promise<number> {
    const row = await this.#db
      .selectFrom('check_ins')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .where('thread_id', '=', threadId)
      .where('state', '=', 'fired')
      .where('fired_at', '>=', isoForDatabase(from))
      .where('fired_at', '<', isoForDatabase(to))
      .executeTakeFirst();
    return Number(row?.count ?? 0);
  }
}

function toCheckIn(row: Selectable<CheckInsTable>): CheckInRecord {
  return {
    id: row.id,
    userId: row.user_id,
    agentId: row.agent_id,
    threadId: row.thread_id,
    dueAt: isoFromDatabase(row.due_at),
    reason: row.reason,
    setAt: isoFromDatabase(row.set_at),
    setByRunId: row.set_by_run_id,
    state: row.state as CheckInState,
    stateReason: row.state_reason,
    runId: row.run_id,
    firedAt: nullableIsoFromDatabase(row.fired_at),
    updatedAt: isoFromDatabase(row.updated_at),
  };
}
