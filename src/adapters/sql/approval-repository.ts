import type { Generated, Kysely, Selectable } from 'kysely';
import type { AlsoWithinDecided, ApprovalDecisionWrite, ApprovalRepository, NewApproval } from '../../app/approvals/approval-ports.js';
import type { StorageTransaction } from '../../app/job-queue.js';
import type { ApprovalChannel, ApprovalRecord, ApprovalStatus, ExecutionOutcome, ExecutionState } from '../../domain/tools/approval.js';
import type { NullableTimestamp, SqlContext, Timestamp } from './database.js';
import { checkLimit, decodeJson, decodeJsonRecord, encodeJson, isoForDatabase, isoFromDatabase, nullableIsoFromDatabase } from './values.js';

interface ToolApprovalsTable {
  id: string;
  user_id: string;
  agent_id: string;
  thread_id: string;
  run_id: string;
  message_id: string;
  tool_call_id: string;
  tool: string;
  arguments: string;
  arguments_hash: string;
  attended: number;
  requested_at: Timestamp;
  expires_at: Timestamp;
  status: string;
  decided_by: string | null;
  channel: string | null;
  decided_at: NullableTimestamp;
  message: string | null;
  edited_arguments: string | null;
  execution: string;
  result: string | null;
  /** The call's place among its step's calls (the order the model made them). */
  position: Generated<number>;
  /** Whether it worked once it ran (version 23; NULL before it finished, and on older rows). */
  outcome: Generated<string | null>;
}

export type ApprovalTables = { tool_approvals: ToolApprovalsTable };

export class SqlApprovalRepository implements ApprovalRepository {
  readonly #db: Kysely<ApprovalTables>;
  readonly #context: SqlContext;

  constructor(context: SqlContext) {
    this.#context = context;
    this.#db = context.db.withTables<ApprovalTables>() as unknown as Kysely<ApprovalTables>;
  }

  async request(approvals: NewApproval[]): Promise<{ records: ApprovalRecord[]; created: ApprovalRecord[] }> {
    const created: ApprovalRecord[] = [];
    const records: ApprovalRecord[] = [];
    for (const [position, approval] of approvals.entries()) {
      // ON CONFLICT DO NOTHING: a replayed step (a resume, a crash) finds the request it made.
      const inserted = await this.#db
        .insertInto('tool_approvals')
        .values({
          id: approval.id,
          user_id: approval.userId,
          agent_id: approval.agentId,
          thread_id: approval.threadId,
          run_id: approval.runId,
          message_id: approval.messageId,
          tool_call_id: approval.toolCallId,
          tool: approval.tool,
          arguments: encodeJson(approval.arguments),
          arguments_hash: approval.argumentsHash,
          attended: approval.attended ? 1 : 0,
          requested_at: isoForDatabase(approval.requestedAt),
          expires_at: isoForDatabase(approval.expiresAt),
          status: 'pending',
          execution: 'none',
          position,
        })
        .onConflict((conflict) => conflict.columns(['thread_id', 'message_id', 'tool_call_id']).doNothing())
        .returningAll()
        .executeTakeFirst();
      if (inserted) {
        const record = toApproval(inserted);
        created.push(record);
        records.push(record);
        continue;
      }
      const existing = await this.#db
        .selectFrom('tool_approvals')
        .selectAll()
        .where('thread_id', '=', approval.threadId)
        .where('message_id', '=', approval.messageId)
        .where('tool_call_id', '=', approval.toolCallId)
        .executeTakeFirstOrThrow();
      records.push(toApproval(existing));
    }
    return { records, created };
  }

  async get(userId: string, id: string): Promise<ApprovalRecord | undefined> {
    const row = await this.#db.selectFrom('tool_approvals').selectAll().where('id', '=', id).where('user_id', '=', userId).executeTakeFirst();
    return row && toApproval(row);
  }

  async getById(id: string): Promise<ApprovalRecord | undefined> {
    const row = await this.#db.selectFrom('tool_approvals').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toApproval(row);
  }

  async list(userId: string, options: { limit: number; status?: ApprovalStatus | undefined; threadId?: string | undefined }): Promise<ApprovalRecord[]> {
    let query = this.#db.selectFrom('tool_approvals').selectAll().where('user_id', '=', userId);
    if (options.status !== undefined) query = query.where('status', '=', options.status);
    if (options.threadId !== undefined) query = query.where('thread_id', '=', options.threadId);
    const rows = await query.orderBy('requested_at', 'desc').orderBy('position', 'desc').orderBy('id', 'desc').limit(checkLimit(options.limit)).execute();
    return rows.map(toApproval);
  }

  async listStep(threadId: string, messageId: string): Promise<ApprovalRecord[]> {
    const rows = await this.#db.selectFrom('tool_approvals').selectAll().where('thread_id', '=', threadId).where('message_id', '=', messageId).orderBy('requested_at').orderBy('position').orderBy('id').execute();
    return rows.map(toApproval);
  }

  async listPending(options: { threadId?: string } = {}): Promise<ApprovalRecord[]> {
    let query = this.#db.selectFrom('tool_approvals').selectAll().where('status', '=', 'pending');
    if (options.threadId !== undefined) query = query.where('thread_id', '=', options.threadId);
    const rows = await query.orderBy('expires_at').execute();
    return rows.map(toApproval);
  }

  async newestOfThread(threadId: string): Promise<ApprovalRecord | undefined> {
    const row = await this.#db.selectFrom('tool_approvals').selectAll().where('thread_id', '=', threadId).orderBy('requested_at', 'desc').orderBy('position', 'desc').orderBy('id', 'desc').limit(1).executeTakeFirst();
    return row && toApproval(row);
  }

  async decide(id: string, decision: ApprovalDecisionWrite, alsoWithin?: AlsoWithinDecided): Promise<ApprovalRecord | undefined> {
    if (!alsoWithin) return decideOne(this.#db, id, decision);
    return this.#context.transaction(async (transaction) => {
      const trx = transaction.withTables<ApprovalTables>() as unknown as Kysely<ApprovalTables>;
      const decided = await decideOne(trx, id, decision);
      if (decided) await alsoWithin(transaction as unknown as StorageTransaction, await stepsOf(trx, [decided]));
      return decided;
    });
  }

  async decideAll(decisions: ReadonlyArray<{ id: string; decision: ApprovalDecisionWrite }>, alsoWithin?: AlsoWithinDecided): Promise<ApprovalRecord[] | undefined> {
    const lost = new Error('a decision of the batch lost');
    try {
      return await this.#context.transaction(async (transaction) => {
        const trx = transaction.withTables<ApprovalTables>() as unknown as Kysely<ApprovalTables>;
        const decided: ApprovalRecord[] = [];
        for (const { id, decision } of decisions) {
          const record = await decideOne(trx, id, decision);
          if (!record) throw lost; // rolls back the ones before it
          decided.push(record);
        }
        if (alsoWithin) await alsoWithin(transaction as unknown as StorageTransaction, await stepsOf(trx, decided));
        return decided;
      });
    } catch (error) {
      if (error === lost) return undefined;
      throw error;
    }
  }

  async beginExecution(id: string): Promise<boolean> {
    const row = await this.#db.updateTable('tool_approvals').set({ execution: 'started' }).where('id', '=', id).where('execution', '=', 'none').returning('id').executeTakeFirst();
    return row !== undefined;
  }

  async finishExecution(id: string, result: string, outcome: ExecutionOutcome): Promise<void> {
    await this.#db.updateTable('tool_approvals').set({ execution: 'done', result, outcome }).where('id', '=', id).execute();
  }
}

/** The steps of these records (each once), every call of each in the model's order, as the transaction sees them. */
async function stepsOf(db: Kysely<ApprovalTables>, records: readonly ApprovalRecord[]): Promise<ApprovalRecord[][]> {
  const steps = new Map<string, ApprovalRecord>();
  for (const record of records) steps.set(JSON.stringify([record.threadId, record.messageId]), record);
  const found: ApprovalRecord[][] = [];
  for (const record of steps.values()) {
    const rows = await db.selectFrom('tool_approvals').selectAll().where('thread_id', '=', record.threadId).where('message_id', '=', record.messageId).orderBy('requested_at').orderBy('position').orderBy('id').execute();
    found.push(rows.map(toApproval));
  }
  return found;
}

/** The first decision wins: only a pending request changes (I16); a person's, only before its deadline. */
async function decideOne(db: Kysely<ApprovalTables>, id: string, decision: ApprovalDecisionWrite): Promise<ApprovalRecord | undefined> {
  let query = db
    .updateTable('tool_approvals')
    .set({
      status: decision.status,
      decided_by: decision.decidedBy,
      channel: decision.channel,
      decided_at: isoForDatabase(decision.decidedAt),
      message: decision.message ?? null,
      edited_arguments: decision.editedArguments ? encodeJson(decision.editedArguments) : null,
    })
    .where('id', '=', id)
    .where('status', '=', 'pending');
  if (decision.beforeDeadline !== undefined) query = query.where('expires_at', '>', isoForDatabase(decision.beforeDeadline));
  const row = await query.returningAll().executeTakeFirst();
  return row && toApproval(row);
}

function toApproval(row: Selectable<ToolApprovalsTable>): ApprovalRecord {
  return {
    id: row.id,
    userId: row.user_id,
    agentId: row.agent_id,
    threadId: row.thread_id,
    runId: row.run_id,
    messageId: row.message_id,
    toolCallId: row.tool_call_id,
    tool: row.tool,
    arguments: decodeJsonRecord(row.arguments),
    argumentsHash: row.arguments_hash,
    attended: Number(row.attended) === 1,
    requestedAt: isoFromDatabase(row.requested_at),
    expiresAt: isoFromDatabase(row.expires_at),
    status: row.status as ApprovalStatus,
    decidedBy: row.decided_by,
    channel: row.channel as ApprovalChannel | null,
    decidedAt: nullableIsoFromDatabase(row.decided_at),
    message: row.message,
    editedArguments: row.edited_arguments === null ? null : (decodeJson(row.edited_arguments) as Record<string, unknown>),
    execution: row.execution as ExecutionState,
    result: row.result,
    outcome: row.outcome === 'succeeded' || row.outcome === 'failed' ? row.outcome : null,
  };
}
