import { sql, type Kysely, type Selectable } from 'kysely';
import type { ProtocolRunError, ProtocolRunRecord, ProtocolRunState, ProtocolStore, ThreadStatusFacts, WriteOptions } from '../../app/langgraph/protocol-store.js';
import type { RunRecord } from '../../app/ports.js';
import { kyselyTransactionOf } from './timer-repository.js';
import type { SqlContext, Timestamp } from './database.js';
import { checkLimit, decodeJsonRecord, encodeJson, isoForDatabase, isoFromDatabase } from './values.js';

interface ThreadMetadataTable {
  thread_id: string;
  user_id: string;
  metadata: string;
  updated_at: Timestamp;
}

interface ProtocolRunsTable {
  run_id: string;
  user_id: string;
  thread_id: string;
  assistant_id: string;
  metadata: string;
  multitask_strategy: string;
  state: string;
  vigil_run_id: string | null;
  created_at: Timestamp;
}

interface ThreadsTable {
  id: string;
  user_id: string;
  agent_id: string;
  message_count: number;
  updated_at: Timestamp;
}

/** What thread status reads of vigil's runs and tool approvals (their own repositories own them). */
interface RunsTable {
  id: string;
  thread_id: string;
  user_id: string;
  status: string;
  requested_at: Timestamp;
  started_at: Timestamp;
  thread_deleted: number;
}

interface ToolApprovalsTable {
  id: string;
  thread_id: string;
  status: string;
}

type Tables = { protocol_thread_metadata: ThreadMetadataTable; protocol_runs: ProtocolRunsTable; threads: ThreadsTable; runs: RunsTable; tool_approvals: ToolApprovalsTable };
export type ProtocolTables = Pick<Tables, 'protocol_thread_metadata' | 'protocol_runs'>;

/** The LangGraph protocol's own rows (migration 12), on SQLite and PostgreSQL. */
export class SqlProtocolStore implements ProtocolStore {
  readonly #db: Kysely<Tables>;

  constructor(context: SqlContext) {
    this.#db = context.db.withTables<Tables>() as unknown as Kysely<Tables>;
  }

  async threadMetadata(userId: string, threadId: string): Promise<Record<string, unknown>> {
    const row = await this.#db.selectFrom('protocol_thread_metadata').select('metadata').where('thread_id', '=', threadId).where('user_id', '=', userId).executeTakeFirst();
    return row ? decodeJsonRecord(row.metadata) : {};
  }

  async threadMetadataOf(userId: string): Promise<Map<string, Record<string, unknown>>> {
    const rows = await this.#db.selectFrom('protocol_thread_metadata').select(['thread_id', 'metadata']).where('user_id', '=', userId).execute();
    return new Map(rows.map((row) => [row.thread_id, decodeJsonRecord(row.metadata)]));
  }

  /** The query builder, or the caller's open transaction. */
  #writer(options: WriteOptions | undefined): Kysely<Tables> {
    return options?.within ? (kyselyTransactionOf(options.within).withTables<Tables>() as unknown as Kysely<Tables>) : this.#db;
  }

  async setThreadMetadata(userId: string, threadId: string, metadata: Record<string, unknown>, now: string, options?: WriteOptions): Promise<void> {
    const values = { thread_id: threadId, user_id: userId, metadata: encodeJson(metadata), updated_at: isoForDatabase(now) };
    await this.#writer(options)
      .insertInto('protocol_thread_metadata')
      .values(values)
      .onConflict((conflict) => conflict.column('thread_id').doUpdateSet({ metadata: values.metadata, updated_at: values.updated_at }).where('protocol_thread_metadata.user_id', '=', userId))
      .execute();
  }

  async rebindEmptyThread(userId: string, threadId: string, agentId: string, now: string): Promise<boolean> {
    const result = await this.#db
      .updateTable('threads')
      .set({ agent_id: agentId, updated_at: isoForDatabase(now) })
      .where('id', '=', threadId)
      .where('user_id', '=', userId)
      .where('message_count', '=', 0)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  async createRun(run: ProtocolRunRecord, options?: WriteOptions): Promise<void> {
    await this.#writer(options)
      .insertInto('protocol_runs')
      .values({
        run_id: run.runId,
        user_id: run.userId,
        thread_id: run.threadId,
        assistant_id: run.assistantId,
        metadata: encodeJson(withInternal(run.metadata, { resumeStep: run.resumeStep, error: run.error, owner: run.owner })),
        multitask_strategy: run.multitaskStrategy,
        state: run.state,
        vigil_run_id: run.vigilRunId,
        created_at: isoForDatabase(run.createdAt),
      })
      .execute();
  }

  async setRunState(runId: string, state: ProtocolRunState, vigilRunId?: string, error?: ProtocolRunError): Promise<void> {
    let metadata: string | undefined;
    if (error !== undefined) {
      // Only the process that ends a run writes its end: read, then written with the state.
      const row = await this.#db.selectFrom('protocol_runs').select('metadata').where('run_id', '=', runId).executeTakeFirst();
      if (row === undefined) return;
      metadata = withError(row.metadata, error);
    }
    await this.#db
      .updateTable('protocol_runs')
      .set({ state, ...(vigilRunId !== undefined ? { vigil_run_id: vigilRunId } : {}), ...(metadata !== undefined ? { metadata } : {}) })
      .where('run_id', '=', runId)
      .execute();
  }

  async moveRun(runId: string, from: ProtocolRunState, to: ProtocolRunState, error?: ProtocolRunError): Promise<boolean> {
    let metadata: string | undefined;
    let before: string | undefined;
    if (error !== undefined) {
      const row = await this.#db.selectFrom('protocol_runs').select(['metadata', 'state']).where('run_id', '=', runId).executeTakeFirst();
      if (row === undefined || row.state !== from) return false;
      before = row.metadata;
      metadata = withError(row.metadata, error);
    }
    // The state decides; the metadata read with it is written back only if nobody changed it since.
    let update = this.#db
      .updateTable('protocol_runs')
      .set({ state: to, ...(metadata !== undefined ? { metadata } : {}) })
      .where('run_id', '=', runId)
      .where('state', '=', from);
    if (before !== undefined) update = update.where('metadata', '=', before);
    const result = await update.executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  async getRun(userId: string, runId: string): Promise<ProtocolRunRecord | undefined> {
    const row = await this.#db.selectFrom('protocol_runs').selectAll().where('run_id', '=', runId).where('user_id', '=', userId).executeTakeFirst();
    return row && toRun(row);
  }

  async statusFactsOf(userId: string, threadIds: readonly string[]): Promise<Map<string, ThreadStatusFacts>> {
    const facts = new Map<string, ThreadStatusFacts>();
    if (threadIds.length === 0) return facts;
    // One row per thread; each subquery reads one index entry (runs_thread_started,
    // protocol_runs_thread, tool_approvals_pending), as the per-thread reads did.
    const rows = await this.#db
      .selectFrom('threads as t')
      .where('t.user_id', '=', userId)
      .where('t.id', 'in', [...new Set(threadIds)])
      .select((eb) => {
        const newestRun = () =>
          eb
            .selectFrom('runs as r')
            .whereRef('r.thread_id', '=', 't.id')
            .whereRef('r.user_id', '=', 't.user_id')
            // Runs of a deleted thread of the same id are records, not this thread's runs.
            .where('r.thread_deleted', '=', 0)
            .orderBy('r.started_at', 'desc')
            .orderBy('r.id', 'desc')
            .limit(1);
        const newestProtocolRun = () =>
          eb.selectFrom('protocol_runs as p').whereRef('p.user_id', '=', 't.user_id').whereRef('p.thread_id', '=', 't.id').orderBy('p.created_at', 'desc').orderBy('p.run_id', 'desc').limit(1);
        return [
          't.id',
          newestRun().select('r.status').as('run_status'),
          newestRun().select('r.requested_at').as('run_requested_at'),
          newestProtocolRun().select('p.state').as('protocol_state'),
          newestProtocolRun().select('p.vigil_run_id').as('protocol_vigil_run_id'),
          newestProtocolRun().select('p.created_at').as('protocol_created_at'),
          eb.exists(eb.selectFrom('tool_approvals as a').select(sql<number>`1`.as('one')).whereRef('a.thread_id', '=', 't.id').where('a.status', '=', 'pending')).as('waiting'),
        ];
      })
      .execute();
    for (const row of rows) {
      facts.set(row.id, {
        newestRun: row.run_status != null && row.run_requested_at != null ? { status: row.run_status as RunRecord['status'], requestedAt: isoFromDatabase(row.run_requested_at) } : null,
        newestProtocolRun:
          row.protocol_state != null && row.protocol_created_at != null
            ? { state: row.protocol_state as ProtocolRunState, vigilRunId: row.protocol_vigil_run_id ?? null, createdAt: isoFromDatabase(row.protocol_created_at) }
            : null,
        // A boolean on PostgreSQL, 0/1 on SQLite.
        waitingForDecision: row.waiting === true || Number(row.waiting) === 1,
      });
    }
    return facts;
  }

  async listRuns(userId: string, threadId: string, options: { limit: number; offset: number }): Promise<ProtocolRunRecord[]> {
    const rows = await this.#db
      .selectFrom('protocol_runs')
      .selectAll()
      .where('user_id', '=', userId)
      .where('thread_id', '=', threadId)
      .orderBy('created_at', 'desc')
      .orderBy('run_id', 'desc')
      .limit(checkLimit(options.limit))
      .offset(options.offset)
      .execute();
    return rows.map(toRun);
  }
}

/**
 * What vigil keeps of a run beside the client's metadata (a resume's step, why it ended
 * before it started, the process that runs it) is stored in the same JSON under the key `vigil`, which a client can
 * never write (clientMetadata refuses it) and which a run's metadata always shows as vigil's
 * own report: read back, it is taken out of the metadata. (No column of its own, so no
 * migration.)
 */
const INTERNAL_KEY = 'vigil';

function withInternal(metadata: Record<string, unknown>, internal: { resumeStep: string | null; error: ProtocolRunError | null; owner: string | null }): Record<string, unknown> {
  const kept = {
    ...(internal.resumeStep !== null ? { resume_step: internal.resumeStep } : {}),
    ...(internal.error !== null ? { error: internal.error } : {}),
    ...(internal.owner !== null ? { owner: internal.owner } : {}),
  };
  return Object.keys(kept).length > 0 ? { ...metadata, [INTERNAL_KEY]: kept } : metadata;
}

/** Stored metadata with why its run ended, the rest of vigil's part kept. */
function withError(text: string, error: ProtocolRunError): string {
  const stored = fromStored(text);
  return encodeJson(withInternal(stored.metadata, { resumeStep: stored.resumeStep, error, owner: stored.owner }));
}

function fromStored(text: string): { metadata: Record<string, unknown>; resumeStep: string | null; error: ProtocolRunError | null; owner: string | null } {
  const { [INTERNAL_KEY]: internal, ...metadata } = decodeJsonRecord(text);
  const kept = (internal ?? {}) as { resume_step?: unknown; error?: { code?: unknown; message?: unknown }; owner?: unknown };
  const error = kept.error && typeof kept.error.code === 'string' && typeof kept.error.message === 'string' ? { code: kept.error.code, message: kept.error.message } : null;
  return { metadata, resumeStep: typeof kept.resume_step === 'string' ? kept.resume_step : null, error, owner: typeof kept.owner === 'string' ? kept.owner : null };
}

function toRun(row: Selectable<ProtocolRunsTable>): ProtocolRunRecord {
  const stored = fromStored(row.metadata);
  return {
    runId: row.run_id,
    userId: row.user_id,
    threadId: row.thread_id,
    assistantId: row.assistant_id,
    metadata: stored.metadata,
    resumeStep: stored.resumeStep,
    error: stored.error,
    owner: stored.owner,
    multitaskStrategy: row.multitask_strategy,
    state: row.state as ProtocolRunState,
    vigilRunId: row.vigil_run_id,
    createdAt: isoFromDatabase(row.created_at),
  };
}
