import type { Kysely, Selectable } from 'kysely';
import type { Iso } from '../../app/ports.js';
import type {
  HeartbeatRecord,
  KnowledgeRecord,
  MilestonePatch,
  MilestoneRecord,
  MilestoneStatus,
  NewMilestone,
  NewPlan,
  NewToolCall,
  PlanPatch,
  PlanPriority,
  PlanRecord,
  PlanRepository,
  PlanStatus,
  ToolCallPage,
  ToolCallRecord,
  ToolCallStatus,
} from '../../app/plans/plan-ports.js';
import { decodeToolCallCursor, encodeToolCallCursor } from './cursor.js';
import { tacticalStepStateSchema } from '../../domain/planner/planner-state.js';
import type { NullableTimestamp, SqlContext, Timestamp } from './database.js';
import { checkLimit, decodeJson, decodeJsonRecord, encodeJson, isoForDatabase, isoFromDatabase, nullableIsoFromDatabase } from './values.js';

interface PlansTable {
  id: string;
  user_id: string;
  agent_id: string;
  thread_id: string;
  status: string;
  request: string;
  source_message_id: string | null;
  goal: string | null;
  priority: string;
  reason: string | null;
  knowledge: string | null;
  heartbeat: string | null;
  strategic_revision_count: number;
  final_critic_reason: string | null;
  last_run_id: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  ended_at: NullableTimestamp;
}

interface PlanMilestonesTable {
  plan_id: string;
  id: string;
  order_index: number;
  title: string;
  description: string;
  success_criteria: string;
  status: string;
  revision_count: number;
  critic_decision: string | null;
  critic_reason: string | null;
  steps: string;
  current_step: number;
  completed_at: NullableTimestamp;
}

interface PlanToolCallsTable {
  id: string;
  plan_id: string;
  run_id: string;
  milestone_id: string | null;
  step_index: number | null;
  seq: number;
  tool: string;
  args: string;
  status: string;
  output: string | null;
  error: string | null;
  started_at: Timestamp;
  ended_at: Timestamp;
}

export type PlanTables = { plans: PlansTable; plan_milestones: PlanMilestonesTable; plan_tool_calls: PlanToolCallsTable };
type PlanDb = Kysely<PlanTables>;

/** Plans, milestones and tool calls over the app's Kysely database (SQLite or PostgreSQL). */
export class SqlPlanRepository implements PlanRepository {
  readonly #context: SqlContext;
  readonly #db: PlanDb;

  constructor(context: SqlContext) {
    this.#context = context;
    this.#db = context.db.withTables<PlanTables>() as unknown as PlanDb;
  }

  async create(plan: NewPlan, now: Iso): Promise<PlanRecord> {
    const at = isoForDatabase(now);
    await this.#db
      .insertInto('plans')
      .values({
        id: plan.id,
        user_id: plan.userId,
        agent_id: plan.agentId,
        thread_id: plan.threadId,
        status: 'planning',
        request: plan.request,
        source_message_id: plan.sourceMessageId,
        goal: null,
        priority: 'medium',
        reason: null,
        knowledge: null,
        heartbeat: null,
        strategic_revision_count: 0,
        final_critic_reason: null,
        last_run_id: plan.runId,
        created_at: at,
        updated_at: at,
        ended_at: null,
      })
      .execute();
    const created = await this.get(plan.userId, plan.id);
    if (!created) throw new Error(`plan ${plan.id} vanished after insert`);
    return created;
  }

  async get(userId: string, planId: string): Promise<PlanRecord | undefined> {
    const row = await this.#db.selectFrom('plans').selectAll().where('id', '=', planId).where('user_id', '=', userId).executeTakeFirst();
    if (!row) return undefined;
    const milestones = await this.#milestonesOf([row.id]);
    return toPlanRecord(row, milestones.get(row.id) ?? []);
  }

  async listByThread(userId: string, threadId: string, options: { limit: number }): Promise<PlanRecord[]> {
    const rows = await this.#db
      .selectFrom('plans')
      .selectAll()
      .where('user_id', '=', userId)
      .where('thread_id', '=', threadId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(checkLimit(options.limit))
      .execute();
    const milestones = await this.#milestonesOf(rows.map((row) => row.id));
    return rows.map((row) => toPlanRecord(row, milestones.get(row.id) ?? []));
  }

  async findOpen(userId: string, threadId: string): Promise<PlanRecord | undefined> {
    const row = await this.#db
      .selectFrom('plans')
      .select('id')
      .where('user_id', '=', userId)
      .where('thread_id', '=', threadId)
      .where('status', 'in', ['planning', 'active', 'stopped'])
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .executeTakeFirst();
    return row ? this.get(userId, row.id) : undefined;
  }

  async update(planId: string, patch: PlanPatch, now: Iso): Promise<void> {
    const set: Partial<Record<keyof PlansTable, unknown>> = { updated_at: isoForDatabase(now) };
    if (patch.status !== undefined) set.status = patch.status;
    if (patch.goal !== undefined) set.goal = patch.goal;
    if (patch.priority !== undefined) set.priority = patch.priority;
    if (patch.reason !== undefined) set.reason = patch.reason;
    if (patch.knowledge !== undefined) set.knowledge = patch.knowledge === null ? null : encodeJson(patch.knowledge);
    if (patch.heartbeat !== undefined) set.heartbeat = patch.heartbeat === null ? null : encodeJson(patch.heartbeat);
    if (patch.strategicRevisionCount !== undefined) set.strategic_revision_count = patch.strategicRevisionCount;
    if (patch.finalCriticReason !== undefined) set.final_critic_reason = patch.finalCriticReason;
    if (patch.lastRunId !== undefined) set.last_run_id = patch.lastRunId;
    if (patch.endedAt !== undefined) set.ended_at = patch.endedAt === null ? null : isoForDatabase(patch.endedAt);
    await this.#db.updateTable('plans').set(set as never).where('id', '=', planId).execute();
  }

  async markStopped(planId: string, input: { runId: string; reason: string }, now: Iso): Promise<boolean> {
    const result = await this.#db
      .updateTable('plans')
      .set({ status: 'stopped', reason: input.reason, updated_at: isoForDatabase(now) })
      .where('id', '=', planId)
      .where('status', 'in', ['planning', 'active'])
      .where('last_run_id', '=', input.runId)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  async replacePendingMilestones(planId: string, milestones: NewMilestone[], now: Iso): Promise<MilestoneRecord[]> {
    await this.#context.transaction(async (transaction) => {
      const trx = transaction.withTables<PlanTables>() as unknown as PlanDb;
      await trx.deleteFrom('plan_milestones').where('plan_id', '=', planId).where('status', '!=', 'completed').execute();
      const last = await trx
        .selectFrom('plan_milestones')
        .select((eb) => eb.fn.max('order_index').as('max'))
        .where('plan_id', '=', planId)
        .executeTakeFirst();
      const start = last?.max === null || last?.max === undefined ? 1 : Number(last.max) + 1;
      if (milestones.length > 0) {
        await trx
          .insertInto('plan_milestones')
          .values(
            milestones.map((milestone, index) => ({
              plan_id: planId,
              id: milestone.id,
              order_index: start + index,
              title: milestone.title,
              description: milestone.description,
              success_criteria: milestone.successCriteria,
              status: 'pending',
              revision_count: 0,
              critic_decision: null,
              critic_reason: null,
              steps: encodeJson([]),
              current_step: 0,
              completed_at: null,
            })),
          )
          .execute();
      }
      await trx.updateTable('plans').set({ updated_at: isoForDatabase(now) }).where('id', '=', planId).execute();
    });
    return (await this.#milestonesOf([planId])).get(planId) ?? [];
  }

  async updateMilestone(planId: string, milestoneId: string, patch: MilestonePatch, now: Iso): Promise<void> {
    const set: Partial<Record<keyof PlanMilestonesTable, unknown>> = {};
    if (patch.status !== undefined) set.status = patch.status;
    if (patch.revisionCount !== undefined) set.revision_count = patch.revisionCount;
    if (patch.criticDecision !== undefined) set.critic_decision = patch.criticDecision;
    if (patch.criticReason !== undefined) set.critic_reason = patch.criticReason;
    if (patch.steps !== undefined) set.steps = encodeJson(patch.steps);
    if (patch.currentStep !== undefined) set.current_step = patch.currentStep;
    if (patch.completedAt !== undefined) set.completed_at = patch.completedAt === null ? null : isoForDatabase(patch.completedAt);
    await this.#context.transaction(async (transaction) => {
      const trx = transaction.withTables<PlanTables>() as unknown as PlanDb;
      if (Object.keys(set).length > 0) await trx.updateTable('plan_milestones').set(set as never).where('plan_id', '=', planId).where('id', '=', milestoneId).execute();
      await trx.updateTable('plans').set({ updated_at: isoForDatabase(now) }).where('id', '=', planId).execute();
    });
  }

  async recordToolCall(call: NewToolCall): Promise<ToolCallRecord> {
    // One run at a time works on a plan (the thread's lock), so max + 1 does not race.
    const seq = await this.#context.transaction(async (transaction) => {
      const trx = transaction.withTables<PlanTables>() as unknown as PlanDb;
      const last = await trx
        .selectFrom('plan_tool_calls')
        .select((eb) => eb.fn.max('seq').as('max'))
        .where('plan_id', '=', call.planId)
        .executeTakeFirst();
      const next = last?.max === null || last?.max === undefined ? 1 : Number(last.max) + 1;
      await trx
        .insertInto('plan_tool_calls')
        .values({
          id: call.id,
          plan_id: call.planId,
          run_id: call.runId,
          milestone_id: call.milestoneId,
          step_index: call.stepIndex,
          seq: next,
          tool: call.tool,
          args: encodeJson(call.args),
          status: call.status,
          output: call.output,
          error: call.error,
          started_at: isoForDatabase(call.startedAt),
          ended_at: isoForDatabase(call.endedAt),
        })
        .execute();
      return next;
    });
    return { ...call, seq };
  }

  async listToolCalls(userId: string, planId: string, options: { limit: number; cursor?: string | undefined }): Promise<ToolCallPage> {
    const limit = checkLimit(options.limit);
    const before = options.cursor === undefined ? undefined : decodeToolCallCursor(options.cursor);
    // Keyset on seq (the (plan_id, seq) unique index), newest first, one row more than asked
    // to learn whether older ones remain: a plan resumed many times is read from its end.
    const rows = await this.#db
      .selectFrom('plan_tool_calls')
      .innerJoin('plans', 'plans.id', 'plan_tool_calls.plan_id')
      .selectAll('plan_tool_calls')
      .where('plans.user_id', '=', userId)
      .where('plan_tool_calls.plan_id', '=', planId)
      .$if(before !== undefined, (query) => query.where('plan_tool_calls.seq', '<', before!.seq))
      .orderBy('plan_tool_calls.seq', 'desc')
      .limit(limit + 1)
      .execute();
    const page = rows.slice(0, limit).reverse();
    const oldest = page[0];
    return {
      toolCalls: page.map(toToolCallRecord),
      nextCursor: rows.length > limit && oldest !== undefined ? encodeToolCallCursor({ seq: Number(oldest.seq) }) : null,
    };
  }

  async #milestonesOf(planIds: string[]): Promise<Map<string, MilestoneRecord[]>> {
    const byPlan = new Map<string, MilestoneRecord[]>();
    if (planIds.length === 0) return byPlan;
    const rows = await this.#db.selectFrom('plan_milestones').selectAll().where('plan_id', 'in', planIds).orderBy('plan_id').orderBy('order_index').execute();
    for (const row of rows) {
      const list = byPlan.get(row.plan_id) ?? [];
      list.push(toMilestoneRecord(row));
      byPlan.set(row.plan_id, list);
    }
    return byPlan;
  }
}

function toPlanRecord(row: Selectable<PlansTable>, milestones: MilestoneRecord[]): PlanRecord {
  return {
    id: row.id,
    userId: row.user_id,
    agentId: row.agent_id,
    threadId: row.thread_id,
    status: row.status as PlanStatus,
    request: row.request,
    sourceMessageId: row.source_message_id,
    goal: row.goal,
    priority: row.priority as PlanPriority,
    reason: row.reason,
    knowledge: row.knowledge === null ? null : (decodeJson(row.knowledge) as KnowledgeRecord),
    heartbeat: row.heartbeat === null ? null : (decodeJson(row.heartbeat) as HeartbeatRecord),
    strategicRevisionCount: Number(row.strategic_revision_count),
    finalCriticReason: row.final_critic_reason,
    lastRunId: row.last_run_id,
    createdAt: isoFromDatabase(row.created_at),
    updatedAt: isoFromDatabase(row.updated_at),
    endedAt: nullableIsoFromDatabase(row.ended_at),
    milestones,
  };
}

function toMilestoneRecord(row: Selectable<PlanMilestonesTable>): MilestoneRecord {
  const steps = tacticalStepStateSchema.array().safeParse(decodeJson(row.steps));
  return {
    id: row.id,
    planId: row.plan_id,
    orderIndex: Number(row.order_index),
    title: row.title,
    description: row.description,
    successCriteria: row.success_criteria,
    status: row.status as MilestoneStatus,
    revisionCount: Number(row.revision_count),
    criticDecision: row.critic_decision,
    criticReason: row.critic_reason,
    steps: steps.success ? steps.data : [],
    currentStep: Number(row.current_step),
    completedAt: nullableIsoFromDatabase(row.completed_at),
  };
}

function toToolCallRecord(row: Selectable<PlanToolCallsTable>): ToolCallRecord {
  return {
    id: row.id,
    planId: row.plan_id,
    runId: row.run_id,
    milestoneId: row.milestone_id,
    stepIndex: row.step_index === null ? null : Number(row.step_index),
    seq: Number(row.seq),
    tool: row.tool,
    args: decodeJsonRecord(row.args),
    status: row.status as ToolCallStatus,
    output: row.output,
    error: row.error,
    startedAt: isoFromDatabase(row.started_at),
    endedAt: isoFromDatabase(row.ended_at),
  };
}
