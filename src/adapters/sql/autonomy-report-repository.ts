import type { Kysely } from 'kysely';
import type { ReportMessage, ReportRun, ReportTimer } from '../../domain/autonomy/autonomy-report.js';
import type { SqlContext } from './database.js';
import type { TimersTable } from './timer-tables.js';
import { decodeRunMeta, RUN_META_COLUMNS } from './run-meta-codec.js';
import { createdAtFromDatabase } from './values.js';

/** How many recent autonomous runs a report reads at most. */
const REPORT_RUN_LIMIT = 2_000;

type ReportTables = { timers: TimersTable };

/** The rows an autonomy report is built from: one agent's autonomous runs, their replies, the person's messages after them, its timers. */
export class SqlAutonomyReportRepository {
  readonly #context: SqlContext;

  constructor(context: SqlContext) {
    this.#context = context;
  }

  async rows(userId: string, agentId: string): Promise<{ runs: ReportRun[]; replies: ReportMessage[]; personMessages: ReportMessage[]; timers: ReportTimer[] }> {
    const { db } = this.#context;
    const runRows = await db
      .selectFrom('runs')
      .select([...RUN_META_COLUMNS, 'thread_id', 'status'])
      .where('user_id', '=', userId)
      .where('agent_id', '=', agentId)
      .where('trigger', 'not in', ['user', 'channel'])
      .orderBy('requested_at', 'desc')
      .limit(REPORT_RUN_LIMIT)
      .execute();
    const runs: ReportRun[] = runRows.map((row) => {
      const meta = decodeRunMeta(row);
      const triggerType = row.trigger === 'autonomy' && typeof meta.trigger_type === 'string' ? `autonomy:${meta.trigger_type}` : row.trigger;
      return { id: row.id, threadId: row.thread_id, triggerType, status: row.status };
    });
    const timers = await (db.withTables<ReportTables>() as unknown as Kysely<ReportTables>)
      .selectFrom('timers')
      .select(['trigger_type', 'state', 'state_reason'])
      .where('user_id', '=', userId)
      .where('agent_id', '=', agentId)
      .execute();
    if (runs.length === 0) return { runs, replies: [], personMessages: [], timers: timers.map(toTimer) };
    const threadIds = [...new Set(runs.map((run) => run.threadId))];
    // History rows of the runs' threads (namespace ''), by thread: the thread store's key index, no scan of other threads.
    const history = () =>
      db
        .selectFrom('thread_messages as m')
        .innerJoin('thread_keys as k', 'k.key', 'm.thread_key')
        .select(['k.thread_id', 'm.seq', 'm.created_at', 'm.run_id'])
        .where('k.thread_id', 'in', threadIds)
        .where('k.checkpoint_ns', '=', '')
        .where('m.visibility', '=', 'user');
    const runIds = new Set(runs.map((run) => run.id));
    const replies = (await history().where('m.type', '=', 'ai').where('m.run_id', 'is not', null).execute()).filter((row) => runIds.has(row.run_id!));
    const personMessages = await history().where('m.type', '=', 'human').execute();
    const toMessage = (row: { thread_id: string; seq: number; created_at: number | Date | string | null; run_id: string | null }): ReportMessage => ({
      threadId: row.thread_id,
      seq: Number(row.seq),
      createdAt: createdAtFromDatabase(row.created_at),
      runId: row.run_id,
    });
    return { runs, replies: replies.map(toMessage), personMessages: personMessages.map(toMessage), timers: timers.map(toTimer) };
  }
}

function toTimer(row: { trigger_type: string; state: string; state_reason: string | null }): ReportTimer {
  return { triggerType: row.trigger_type, state: row.state, stateReason: row.state_reason };
}
