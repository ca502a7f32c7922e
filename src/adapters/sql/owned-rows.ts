/**
 * What deleting a thread or an agent takes with it, in the transaction that deletes it:
 * the rows of other features that belong to it, so that nothing of it is served after, or
 * comes back to someone who reuses its id (clients choose both: an agent's id, and a
 * thread's through the LangGraph protocol).
 */
import type { Transaction } from 'kysely';
import type { ApprovalTables } from './approval-repository.js';
import type { CheckInTables } from './check-in-repository.js';
import type { Database } from './database.js';
import type { HookTables } from './hook-tables.js';
import type { OutboundTables } from './outbound-webhook-repository.js';
import type { PlanTables } from './plan-repository.js';
import type { ProtocolTables } from './protocol-repository.js';
import type { ScheduleTables } from './schedule-repository.js';
import type { TelegramTables } from './telegram-tables.js';
import type { TimerTables } from './timer-tables.js';

/**
 * What a thread's deletion must keep of it, in the transaction that deletes it and before
 * its messages go: which webhook deliveries it held the task of. A retried delivery is
 * told from a replay by its run's messages in the thread (hook-service.ts takeOver), so
 * without this a replay after the deletion was taken for a retry of a delivery that never
 * stored its task: it was taken over, failed on the missing thread, its record was
 * forgotten, and the next replay ran the task a second time. Nothing happens when the
 * thread is not the user's.
 */
export async function keepThreadAcceptedDeliveries(trx: Transaction<Database>, userId: string, threadId: string): Promise<void> {
  await trx
    .withTables<HookTables>()
    .updateTable('hook_deliveries')
    .set({ thread_deleted: 1 })
    .where('thread_deleted', '=', 0)
    .where('run_id', 'in', (eb) =>
      eb
        .selectFrom('thread_messages')
        .innerJoin('thread_keys', 'thread_keys.key', 'thread_messages.thread_key')
        .innerJoin('threads', 'threads.id', 'thread_keys.thread_id')
        .select('thread_messages.run_id')
        .where('thread_keys.thread_id', '=', threadId)
        .where('thread_keys.checkpoint_ns', '=', '')
        .where('threads.user_id', '=', userId)
        .where('thread_messages.run_id', 'is not', null)
        .$narrowType<{ run_id: string }>(),
    )
    .execute();
}

/**
 * What a thread's deletion takes with it, in the transaction that deletes the thread (its
 * messages go by ON DELETE CASCADE): the rows of other features that hold what was said
 * in it or act on it. Without this a deleted thread's plan (its request, its tool calls and
 * their results) and its approval requests (the calls' arguments) were still served, a
 * pending check-in or approval waited on a thread id that a client may reuse (the LangGraph
 * protocol lets it choose one), and a Telegram chat stayed mapped to the missing thread, so
 * its messages were dropped for good. Memories the agent noted in the thread stay (they are
 * the agent's, and the person deletes them on their own); they no longer name the thread,
 * only the run (whose record stays).
 * What would start runs on the thread goes here too, not before the transaction: its
 * follow-ups (all of them, settled ones too), and the schedules and webhooks bound to it, with
 * its LangGraph protocol metadata. Done before it (as it was), a deletion that then failed
 * (the server stopping while it waited for the thread, a database error) left the thread
 * without them; done after the commit, a process that died in between left schedules and
 * webhooks that name a thread nobody has, and metadata that a thread made later with the
 * same id would inherit.
 * Jobs armed for these rows find nothing and do nothing. Runs stay as
 * the record of what happened.
 */
export async function deleteThreadOwnedRows(trx: Transaction<Database>, userId: string, threadId: string): Promise<void> {
  const db = trx.withTables<PlanTables & ApprovalTables & CheckInTables & TelegramTables & TimerTables & ScheduleTables & HookTables & ProtocolTables>();
  // Milestones and tool calls go with their plan (ON DELETE CASCADE).
  await db.deleteFrom('plans').where('user_id', '=', userId).where('thread_id', '=', threadId).execute();
  await db.deleteFrom('tool_approvals').where('user_id', '=', userId).where('thread_id', '=', threadId).execute();
  await db.deleteFrom('check_ins').where('user_id', '=', userId).where('thread_id', '=', threadId).execute();
  await db.deleteFrom('telegram_chats').where('user_id', '=', userId).where('thread_id', '=', threadId).execute();
  await db.updateTable('memories').set({ thread_id: null }).where('user_id', '=', userId).where('thread_id', '=', threadId).execute();
  // Its follow-ups, whatever their state: keyed by thread id, they were a thread made later
  // with this id's own (listed as its timers, counted against its per-silence and per-day
  // caps), and a fired one whose run never finished was recovered into it, a follow-up of a
  // conversation the person had deleted. A job still armed for one finds no timer and does
  // nothing (follow-up-firer.ts); the agent's daily model-call budget is autonomy_usage's,
  // which stays.
  await db.deleteFrom('timers').where('user_id', '=', userId).where('thread_id', '=', threadId).execute();
  // Its pause and its last person's message: keyed by thread id alone, a thread made later
  // with this id (by anyone: the protocol lets a client choose it) would inherit them.
  await db.deleteFrom('autonomy_threads').where('user_id', '=', userId).where('thread_id', '=', threadId).execute();
  await db.deleteFrom('schedules').where('user_id', '=', userId).where('thread_id', '=', threadId).execute();
  // Their deliveries go with them (ON DELETE CASCADE).
  await db.deleteFrom('hooks').where('user_id', '=', userId).where('thread_id', '=', threadId).execute();
  await db.deleteFrom('protocol_thread_metadata').where('user_id', '=', userId).where('thread_id', '=', threadId).execute();
  // The protocol's view of its runs goes (LangGraph deletes a thread's runs with it); vigil's
  // run records stay, marked: a thread made again with this id listed them as its own.
  await db.deleteFrom('protocol_runs').where('user_id', '=', userId).where('thread_id', '=', threadId).execute();
  await trx.updateTable('runs').set({ thread_deleted: 1 }).where('user_id', '=', userId).where('thread_id', '=', threadId).where('thread_deleted', '=', 0).execute();
}

/**
 * What an agent's deletion takes with it (its threads go one by one before, each with its
 * own rows): its memories and its outbound webhooks. Agent ids are the person's to choose
 * and `default` comes back on its own on next use, so without this a new agent of the same
 * id recalled the old one's memories and posted to the old one's webhook addresses. A
 * delivery still queued for a deleted webhook is recorded as failed, as when one webhook
 * is deleted. The agent's autonomy usage stays: deleting and re-creating an agent must not
 * reset its daily budget.
 */
export async function deleteAgentOwnedRows(trx: Transaction<Database>, userId: string, agentId: string): Promise<void> {
  await trx.deleteFrom('memories').where('user_id', '=', userId).where('agent_id', '=', agentId).execute();
  await trx.withTables<OutboundTables>().deleteFrom('outbound_webhooks').where('user_id', '=', userId).where('agent_id', '=', agentId).execute();
}
