import type { Iso } from '../../app/ports.js';
import type { RetentionKind, RetentionStore } from '../../app/retention.js';
import type { SqlContext } from './database.js';
import type { ApprovalTables } from './approval-repository.js';
import type { CheckInTables } from './check-in-repository.js';
import type { HookTables } from './hook-tables.js';
import type { OutboundTables } from './outbound-webhook-repository.js';
import type { ProtocolTables } from './protocol-repository.js';
import type { ScheduleTables } from './schedule-repository.js';
import type { TelegramTables } from './telegram-tables.js';
import type { TimerTables } from './timer-tables.js';

/**
 * Batched deletes of old records, on SQLite and PostgreSQL alike: each statement deletes
 * the ids a bounded subquery found (through the retention indexes), never a whole range.
 */
export class SqlRetentionRepository implements RetentionStore {
  readonly #db;

  constructor(context: SqlContext) {
    this.#db = context.db.withTables<HookTables & TelegramTables & TimerTables & ApprovalTables & CheckInTables & OutboundTables & ProtocolTables & ScheduleTables>();
  }

  async pruneBatch(kind: RetentionKind, before: Iso, limit: number): Promise<number> {
    const db = this.#db;
    switch (kind) {
      case 'runs': {
        // Only finished runs: a run still going (or whose process died mid-run) is kept, and
        // so is one that stopped for a person's approval still pending: the run that resumes
        // it takes its trigger and correlation id from it (I16), however long the person takes.
        const result = await db
          .deleteFrom('runs')
          .where(
            'id',
            'in',
            db
              .selectFrom('runs')
              .select('runs.id')
              .where('runs.ended_at', 'is not', null)
              .where('runs.ended_at', '<', before)
              .where(({ not, exists, selectFrom }) =>
                not(
                  exists(
                    selectFrom('tool_approvals as waiting')
                      .select('waiting.id')
                      // The thread first: the pending-approvals index is on it.
                      .whereRef('waiting.thread_id', '=', 'runs.thread_id')
                      .whereRef('waiting.run_id', '=', 'runs.id')
                      .where('waiting.status', '=', 'pending'),
                  ),
                ),
              )
              .limit(limit),
          )
          .executeTakeFirst();
        return Number(result.numDeletedRows);
      }
      case 'timers': {
        // Only settled timers: a pending one is a promise still to keep, however old. And
        // never a fired follow-up of a silence that has not ended (no real user message since
        // the one it was scheduled against): the per-silence cap counts those rows (I5), so
        // without them a thread silent for longer than the window got its follow-ups again
        // after every pass. They are bounded by the cap, per thread; a person's next message
        // releases them (the thread's deletion deletes them).
        const result = await db
          .deleteFrom('timers')
          .where(
            'id',
            'in',
            db
              .selectFrom('timers as settled')
              .select('settled.id')
              .where('settled.state', '<>', 'pending')
              .where('settled.updated_at', '<', before)
              .where(({ eb, or, not, exists, selectFrom }) =>
                or([
                  eb('settled.state', '<>', 'fired'),
                  not(
                    exists(
                      selectFrom('threads as thread')
                        .leftJoin('autonomy_threads as autonomy', 'autonomy.thread_id', 'thread.id')
                        .select('thread.id')
                        .whereRef('thread.id', '=', 'settled.thread_id')
                        .whereRef('thread.user_id', '=', 'settled.user_id')
                        // Nothing a person said after the anchor: neither the thread's last user
                        // activity nor the receipt of their last message (I6) is later than it.
                        .where((inner) =>
                          inner.and(
                            (['thread.last_user_activity_at', 'autonomy.last_user_message_at'] as const).map((column) =>
                              inner.or([inner(column, 'is', null), inner.and([inner('settled.scheduled_against', 'is not', null), inner(column, '<=', inner.ref('settled.scheduled_against'))])]),
                            ),
                          ),
                        ),
                    ),
                  ),
                ]),
              )
              .limit(limit),
          )
          .executeTakeFirst();
        return Number(result.numDeletedRows);
      }
      case 'protocol_runs': {
        // The protocol's view of a run (its metadata, its multitask strategy): once the run's
        // own record went (finished and past the window: 'runs' above) or it never had one
        // (refused, cancelled before it started), nothing lists or resumes it.
        const result = await db
          .deleteFrom('protocol_runs')
          .where(
            'run_id',
            'in',
            db
              .selectFrom('protocol_runs as old')
              .select('old.run_id')
              .where('old.created_at', '<', before)
              .where(({ not, exists, selectFrom, fn }) => not(exists(selectFrom('runs').select('runs.id').whereRef('runs.id', '=', fn.coalesce('old.vigil_run_id', 'old.run_id')))))
              .limit(limit),
          )
          .executeTakeFirst();
        return Number(result.numDeletedRows);
      }
      case 'schedule_fires': {
        // Ended fires past the window, but never a schedule's latest: start-up recovery arms
        // the next fire from it (without it, from the schedule's last change: a fire long
        // past, run again). A deleted schedule's fires all go.
        const result = await db
          .deleteFrom('schedule_fires')
          .where(
            'id',
            'in',
            db
              .selectFrom('schedule_fires as fire')
              .select('fire.id')
              .where('fire.ended_at', 'is not', null)
              .where('fire.ended_at', '<', before)
              .where(({ or, not, exists, selectFrom }) =>
                or([
                  exists(selectFrom('schedule_fires as later').select('later.id').whereRef('later.schedule_id', '=', 'fire.schedule_id').whereRef('later.scheduled_for', '>', 'fire.scheduled_for')),
                  not(exists(selectFrom('schedules').select('schedules.id').whereRef('schedules.id', '=', 'fire.schedule_id'))),
                ]),
              )
              .limit(limit),
          )
          .executeTakeFirst();
        return Number(result.numDeletedRows);
      }
      case 'hook_deliveries': {
        // Past the signature's freshness window a delivery id can no longer be replayed, so
        // dropping its record cannot let a replay in.
        const result = await db
          .deleteFrom('hook_deliveries')
          .where((eb) =>
            eb(eb.refTuple('hook_id', 'delivery_id'), 'in', db.selectFrom('hook_deliveries').select(['hook_id', 'delivery_id']).where('received_at', '<', before).limit(limit).$asTuple('hook_id', 'delivery_id')),
          )
          .executeTakeFirst();
        return Number(result.numDeletedRows);
      }
      case 'telegram_updates': {
        // Handled update ids: kept only so that a redelivered update does not run twice, which
        // Telegram stops doing after a day. The channel also prunes them when it starts; this
        // keeps the table bounded on a server that runs for months.
        const result = await db
          .deleteFrom('telegram_updates')
          .where((eb) =>
            eb(eb.refTuple('bot_id', 'update_id'), 'in', db.selectFrom('telegram_updates').select(['bot_id', 'update_id']).where('received_at', '<', before).limit(limit).$asTuple('bot_id', 'update_id')),
          )
          .executeTakeFirst();
        return Number(result.numDeletedRows);
      }
      case 'approvals': {
        // Decided or expired requests only, and only when no call of their step still waits:
        // a replayed step finds its decided calls by their records (I16), so they stay while
        // a sibling is pending.
        const result = await db
          .deleteFrom('tool_approvals')
          .where(
            'id',
            'in',
            db
              .selectFrom('tool_approvals as settled')
              .select('settled.id')
              .where('settled.status', '<>', 'pending')
              .where('settled.decided_at', '<', before)
              .where(({ not, exists, selectFrom }) =>
                not(
                  exists(
                    selectFrom('tool_approvals as waiting')
                      .select('waiting.id')
                      .whereRef('waiting.thread_id', '=', 'settled.thread_id')
                      .whereRef('waiting.message_id', '=', 'settled.message_id')
                      .where('waiting.status', '=', 'pending'),
                  ),
                ),
              )
              .limit(limit),
          )
          .executeTakeFirst();
        return Number(result.numDeletedRows);
      }
      case 'check_ins': {
        // Fired, cancelled or skipped: a pending check-in is a promise the agent made.
        const result = await db
          .deleteFrom('check_ins')
          .where('id', 'in', db.selectFrom('check_ins').select('id').where('state', '<>', 'pending').where('updated_at', '<', before).limit(limit))
          .executeTakeFirst();
        return Number(result.numDeletedRows);
      }
      case 'outbound_attempts': {
        // The attempts of deliveries that are over (delivered, or given up); never of one still retrying.
        const result = await db
          .deleteFrom('outbound_attempts')
          .where(
            'id',
            'in',
            db
              .selectFrom('outbound_attempts')
              .innerJoin('outbound_deliveries', 'outbound_deliveries.id', 'outbound_attempts.delivery_id')
              .select('outbound_attempts.id')
              .where('outbound_deliveries.status', '<>', 'pending')
              .where('outbound_deliveries.updated_at', '<', before)
              .limit(limit),
          )
          .executeTakeFirst();
        return Number(result.numDeletedRows);
      }
      case 'outbound_deliveries': {
        // Once its attempts are gone (the pass before), so an interrupted pass leaves no orphans.
        const result = await db
          .deleteFrom('outbound_deliveries')
          .where(
            'id',
            'in',
            db
              .selectFrom('outbound_deliveries as delivery')
              .select('delivery.id')
              .where('delivery.status', '<>', 'pending')
              .where('delivery.updated_at', '<', before)
              .where(({ not, exists, selectFrom }) => not(exists(selectFrom('outbound_attempts').select('outbound_attempts.id').whereRef('outbound_attempts.delivery_id', '=', 'delivery.id'))))
              .limit(limit),
          )
          .executeTakeFirst();
        return Number(result.numDeletedRows);
      }
    }
  }
}
