import type { Selectable } from 'kysely';
import type { ModelInputRecord } from '../../domain/context/context-report.js';
import type { NewRun, RunEnd, RunRecord, RunRepository } from '../../app/ports.js';
import { VigilError } from '../../domain/errors.js';
import type { RunStatus, RunTrigger } from '../../domain/run-context.js';
import type { RunsTable, SqlContext } from './database.js';
import { decodeRunMeta, encodeRunMeta } from './run-meta-codec.js';
import { checkLimit, decodeJson, encodeJson, isoForDatabase, isoFromDatabase, nullableIsoFromDatabase } from './values.js';

export class SqlRunRepository implements RunRepository {
  readonly #context: SqlContext;

  constructor(context: SqlContext) {
    this.#context = context;
  }

  async create(run: NewRun): Promise<RunRecord> {
    const requestedAt = isoForDatabase(run.requestedAt);
    const stored = encodeRunMeta(run.meta, { trigger: run.trigger, id: run.id, requested_at: requestedAt, correlation_id: run.correlationId });
    const row = await this.#context.db
      .insertInto('runs')
      .values({
        id: run.id,
        thread_id: run.threadId,
        user_id: run.userId,
        agent_id: run.agentId,
        trigger: run.trigger,
        ...stored,
        correlation_id: run.correlationId,
        status: 'running',
        reason: null,
        error_code: null,
        error_message: null,
        model: run.model,
        requested_at: requestedAt,
        started_at: isoForDatabase(run.startedAt),
        ended_at: null,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return toRunRecord(row);
  }

  /**
   * Ends a running run. The first end wins: finishing a run that already ended (say, a
   * cancel racing an error) changes nothing and answers the run as it is.
   */
  async finish(runId: string, end: RunEnd): Promise<RunRecord> {
    const ended = await this.#context.db
      .updateTable('runs')
      .set({
        status: end.status,
        reason: end.reason ?? null,
        error_code: end.errorCode ?? null,
        error_message: end.errorMessage ?? null,
        ended_at: isoForDatabase(end.endedAt),
        ...(end.modelInputs && end.modelInputs.length > 0 ? { model_inputs: encodeJson(end.modelInputs) } : {}),
      })
      .where('id', '=', runId)
      .where('status', '=', 'running')
      .returningAll()
      .executeTakeFirst();
    if (ended !== undefined) return toRunRecord(ended);
    const existing = await this.#context.db.selectFrom('runs').selectAll().where('id', '=', runId).executeTakeFirst();
    if (existing === undefined) throw new VigilError('RUN_NOT_FOUND', `no run "${runId}"`);
    return toRunRecord(existing);
  }

  async get(userId: string, runId: string): Promise<RunRecord | undefined> {
    const row = await this.#context.db.selectFrom('runs').selectAll().where('id', '=', runId).where('user_id', '=', userId).executeTakeFirst();
    return row === undefined ? undefined : toRunRecord(row);
  }

  /** Newest first. */
  async listByThread(userId: string, threadId: string, options: { limit: number }): Promise<RunRecord[]> {
    const rows = await this.#context.db
      .selectFrom('runs')
      .selectAll()
      .where('thread_id', '=', threadId)
      .where('user_id', '=', userId)
      // Runs of a deleted thread of the same id are records, not this thread's runs.
      .where('thread_deleted', '=', 0)
      .orderBy('started_at', 'desc')
      .orderBy('id', 'desc')
      .limit(checkLimit(options.limit))
      .execute();
    return rows.map(toRunRecord);
  }

  async listRunning(options: { startedBefore: string; limit: number }): Promise<RunRecord[]> {
    const rows = await this.#context.db
      .selectFrom('runs')
      .selectAll()
      .where('status', '=', 'running')
      .where('started_at', '<', isoForDatabase(options.startedBefore))
      .orderBy('started_at', 'asc')
      .limit(checkLimit(options.limit))
      .execute();
    return rows.map(toRunRecord);
  }
}

function toRunRecord(row: Selectable<RunsTable>): RunRecord {
  return {
    id: row.id,
    threadId: row.thread_id,
    userId: row.user_id,
    agentId: row.agent_id,
    trigger: row.trigger as RunTrigger,
    meta: decodeRunMeta(row),
    correlationId: row.correlation_id,
    status: row.status as RunStatus,
    reason: row.reason,
    errorCode: row.error_code,
    errorMessage: row.error_message,
    model: row.model,
    requestedAt: isoFromDatabase(row.requested_at),
    startedAt: isoFromDatabase(row.started_at),
    endedAt: nullableIsoFromDatabase(row.ended_at),
    modelInputs: row.model_inputs === null || row.model_inputs === undefined ? [] : (decodeJson(row.model_inputs) as ModelInputRecord[]),
    ...(Number(row.thread_deleted) !== 0 ? { threadDeleted: true } : {}),
  };
}
