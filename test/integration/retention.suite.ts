import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SqlStorage } from '../../src/adapters/sql/sql-storage.js';
import type { HookTables } from '../../src/adapters/sql/hook-tables.js';
import type { TimerTables } from '../../src/adapters/sql/timer-tables.js';
import type { ApprovalTables } from '../../src/adapters/sql/approval-repository.js';
import type { CheckInTables } from '../../src/adapters/sql/check-in-repository.js';
import type { OutboundTables } from '../../src/adapters/sql/outbound-webhook-repository.js';
import type { TelegramTables } from '../../src/adapters/sql/telegram-tables.js';
import type { ProtocolTables } from '../../src/adapters/sql/protocol-repository.js';
import type { ScheduleTables } from '../../src/adapters/sql/schedule-repository.js';
import { ALICE, startTestServer, type Backend, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';

const DAY = 24 * 3600_000;
const ago = (days: number) => new Date(Date.now() - days * DAY).toISOString();

export function retentionSuite(backend: () => Backend): void {
  describe('retention (VIGIL_RETENTION_DAYS)', () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer(backend(), { environment: { VIGIL_RETENTION_DAYS: '30' } });
    });
    afterAll(async () => {
      await server?.destroy();
    });

    const db = () => (server.storage as SqlStorage).context.db.withTables<HookTables & TelegramTables & TimerTables & ApprovalTables & CheckInTables & OutboundTables & ProtocolTables & ScheduleTables>();
    const none = { runs: 0, protocol_runs: 0, timers: 0, hook_deliveries: 0, telegram_updates: 0, approvals: 0, check_ins: 0, outbound_attempts: 0, outbound_deliveries: 0, schedule_fires: 0 };

    async function run(id: string, status: string, endedAt: string | null, startedAt: string) {
      await db()
        .insertInto('runs')
        .values({ id, thread_id: 't', user_id: 'alice', agent_id: 'default', trigger: 'user', meta: '{}', correlation_id: id, status, reason: null, error_code: null, error_message: null, model: 'demo', requested_at: startedAt, started_at: startedAt, ended_at: endedAt })
        .execute();
    }
    async function timer(id: string, state: string, updatedAt: string) {
      await db()
        .insertInto('timers')
        .values({ id, thread_id: 't', user_id: 'alice', agent_id: 'default', due_at: updatedAt, trigger_type: 'check_in', reason: 'r', attempt: 0, state, state_reason: null, scheduled_against: null, source_run_id: null, run_id: null, created_at: updatedAt, updated_at: updatedAt, fired_at: null })
        .execute();
    }

    it('prunes old finished runs, settled timers and webhook deliveries, and keeps everything still live or recent', async () => {
      await run('run-old-done', 'succeeded', ago(40), ago(40));
      await run('run-old-failed', 'failed', ago(31), ago(31));
      await run('run-old-running', 'running', null, ago(40)); // never finished: kept
      await run('run-recent', 'succeeded', ago(2), ago(2));
      await timer('timer-old-fired', 'fired', ago(45));
      await timer('timer-old-cancelled', 'cancelled', ago(35));
      await timer('timer-old-pending', 'pending', ago(45)); // a promise still to keep: kept
      await timer('timer-recent', 'fired', ago(1));
      await db().insertInto('hooks').values({ id: 'hook-1', user_id: 'alice', agent_id: 'default', thread_id: null, name: 'h', task_template: 't', payload_fields: null, secret_ciphertext: 'x', created_at: ago(50) }).execute();
      await db().insertInto('hook_deliveries').values({ hook_id: 'hook-1', delivery_id: 'old', run_id: 'r1', received_at: ago(40) }).execute();
      await db().insertInto('hook_deliveries').values({ hook_id: 'hook-1', delivery_id: 'new', run_id: 'r2', received_at: ago(1) }).execute();

      const deleted = await server.services.retention.runOnce();
      expect(deleted).toEqual({ ...none, runs: 2, timers: 2, hook_deliveries: 1 });
      const runs = (await db().selectFrom('runs').select('id').execute()).map((row) => row.id).sort();
      expect(runs).toEqual(['run-old-running', 'run-recent']);
      const timers = (await db().selectFrom('timers').select('id').execute()).map((row) => row.id).sort();
      expect(timers).toEqual(['timer-old-pending', 'timer-recent']);
      const deliveries = (await db().selectFrom('hook_deliveries').select('delivery_id').execute()).map((row) => row.delivery_id);
      expect(deliveries).toEqual(['new']);
      expect(server.logs.some((line) => line.msg === 'retention pass done')).toBe(true);
      // A second pass finds nothing more.
      expect(await server.services.retention.runOnce()).toEqual(none);
    });

    async function approval(id: string, step: string, status: string, decidedAt: string | null, requestedAt: string) {
      await db()
        .insertInto('tool_approvals')
        .values({ id, user_id: 'alice', agent_id: 'default', thread_id: 't', run_id: 'r', message_id: step, tool_call_id: id, tool: 'memory_write', arguments: '{}', arguments_hash: 'h', attended: 0, requested_at: requestedAt, expires_at: ago(-1), status, decided_by: decidedAt ? 'alice' : null, channel: decidedAt ? 'api' : null, decided_at: decidedAt, message: null, edited_arguments: null, execution: 'none', result: null })
        .execute();
    }
    async function checkIn(id: string, state: string, updatedAt: string) {
      await db()
        .insertInto('check_ins')
        .values({ id, user_id: 'alice', agent_id: 'default', thread_id: 't', due_at: updatedAt, reason: 'r', set_at: updatedAt, set_by_run_id: null, state, state_reason: null, run_id: null, fired_at: null, updated_at: updatedAt })
        .execute();
    }
    async function delivery(id: string, status: string, updatedAt: string, attempts: number) {
      await db()
        .insertInto('outbound_deliveries')
        .values({ id, webhook_id: 'wh', user_id: 'alice', event_type: 'approval.requested', payload: '{}', status, attempts, last_error: null, created_at: updatedAt, updated_at: updatedAt })
        .execute();
      for (let attempt = 1; attempt <= attempts; attempt += 1) {
        await db().insertInto('outbound_attempts').values({ id: `${id}-${attempt}`, delivery_id: id, attempt, at: updatedAt, status_code: 500, error: null }).execute();
      }
    }

    it('I16, I7: prunes decided or expired approvals, settled check-ins and finished outbound deliveries with their attempts; never a pending one', async () => {
      await approval('approval-old-approved', 'step-a', 'approved', ago(40), ago(41));
      await approval('approval-old-expired', 'step-b', 'expired', ago(35), ago(36));
      await approval('approval-old-pending', 'step-c', 'pending', null, ago(45)); // still waits: kept
      await approval('approval-old-sibling', 'step-c', 'rejected', ago(44), ago(45)); // its step still waits: kept
      await approval('approval-recent', 'step-d', 'superseded', ago(1), ago(1));
      await checkIn('check-in-old-fired', 'fired', ago(40));
      await checkIn('check-in-old-cancelled', 'cancelled', ago(33));
      await checkIn('check-in-old-pending', 'pending', ago(45)); // the agent's promise: kept
      await checkIn('check-in-recent', 'fired', ago(3));
      await delivery('delivery-old-delivered', 'delivered', ago(40), 2);
      await delivery('delivery-old-failed', 'failed', ago(50), 3);
      await delivery('delivery-old-pending', 'pending', ago(40), 2); // still retrying: kept, attempts too
      await delivery('delivery-recent', 'delivered', ago(1), 1);

      const deleted = await server.services.retention.runOnce();
      expect(deleted).toMatchObject({ approvals: 2, check_ins: 2, outbound_attempts: 5, outbound_deliveries: 2 });
      const ids = async (table: 'tool_approvals' | 'check_ins' | 'outbound_deliveries') => (await db().selectFrom(table).select('id').execute()).map((row) => row.id).sort();
      expect(await ids('tool_approvals')).toEqual(['approval-old-pending', 'approval-old-sibling', 'approval-recent']);
      expect(await ids('check_ins')).toEqual(['check-in-old-pending', 'check-in-recent']);
      expect(await ids('outbound_deliveries')).toEqual(['delivery-old-pending', 'delivery-recent']);
      const attempts = (await db().selectFrom('outbound_attempts').select('id').execute()).map((row) => row.id).sort();
      expect(attempts).toEqual(['delivery-old-pending-1', 'delivery-old-pending-2', 'delivery-recent-1']);

      // Once the step's last call is decided, its old sibling goes with the next pass.
      await db().updateTable('tool_approvals').set({ status: 'expired', decided_at: ago(31), decided_by: 'system', channel: 'system' }).where('id', '=', 'approval-old-pending').execute();
      expect(await server.services.retention.runOnce()).toEqual({ ...none, approvals: 2 });
      expect(await ids('tool_approvals')).toEqual(['approval-recent']);
    });

    it('I5: keeps the fired follow-ups of a silence that has not ended, so the per-silence cap still holds after a pass', async () => {
      // One follow-up per silence; the person says something, the follow-up fires, the next is skipped.
      const agentId = 'retention-autonomy';
      const policy = { enabled: true, delaysMs: { check_in: 50, question_unanswered: 50, task_incomplete: 50, waiting_for_decision: 50 }, minDelayMs: 10, maxPerSilence: 1, maxPerDay: 100, modelCallsPerDay: 1000 };
      expect((await server.request('POST', '/api/agents', { body: { id: agentId, name: 'follows up', autonomy: policy } })).status).toBe(201);
      const threadId = (await server.request('POST', '/api/threads', { body: { agentId } })).body.id as string;
      expect((await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'Hello' } })).status).toBe(200);
      const timersOf = async () => (await server.request('GET', `/api/threads/${threadId}/timers?state=all&limit=100`)).body.timers as Array<{ id: string; state: string; stateReason: string | null }>;
      await waitFor(async () => (await timersOf()).some((timer) => timer.stateReason === 'cap_per_silence'), 15_000, 'the follow-up to fire and the next to be capped');
      const fired = (await timersOf()).filter((timer) => timer.state === 'fired');
      expect(fired).toHaveLength(1);

      // The person stays silent for 40 days: the follow-up's record is older than the retention window.
      await db().updateTable('timers').set({ updated_at: ago(40) }).where('thread_id', '=', threadId).execute();
      await server.services.retention.runOnce();
      expect((await timersOf()).map((timer) => timer.id)).toContain(fired[0]!.id);

      // Something else runs on the thread (a webhook's task): the silence has had its follow-up.
      const { HumanMessage } = await import('@langchain/core/messages');
      await server.services.conversations.runTriggered(ALICE.id, threadId, {
        trigger: 'webhook',
        input: new HumanMessage({ content: 'A delivery arrived.', additional_kwargs: { synthetic: true, trigger_type: 'webhook' } }),
        meta: { hook_id: 'hook-retention', delivery_id: 'delivery-retention' },
      });
      await waitFor(async () => (await timersOf()).filter((timer) => timer.state !== 'fired').length > 0, 15_000, 'the follow-up planned after the webhook run');
      const after = (await timersOf()).filter((timer) => timer.state !== 'fired');
      expect(after.map((timer) => [timer.state, timer.stateReason])).toEqual([['skipped', 'cap_per_silence']]);

      // The person writes again: that silence is over, and its old follow-up goes with the next pass.
      expect((await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'I am back' } })).status).toBe(200);
      await server.services.retention.runOnce();
      expect((await timersOf()).map((timer) => timer.id)).not.toContain(fired[0]!.id);
    });

    it('prunes handled Telegram update ids past the window, never younger than the 48 hours a redelivery needs', async () => {
      const update = async (updateId: number, receivedAt: string) => {
        await db().insertInto('telegram_updates').values({ bot_id: 7000000001, update_id: updateId, received_at: receivedAt }).execute();
      };
      await update(1, ago(40));
      await update(2, ago(3));
      await update(3, ago(1.5));
      const ids = async () => (await db().selectFrom('telegram_updates').select('update_id').execute()).map((row) => Number(row.update_id)).sort();
      expect(await server.services.retention.runOnce()).toEqual({ ...none, telegram_updates: 1 });
      expect(await ids()).toEqual([2, 3]);

      // A one-day window still keeps what arrived within the last 48 hours.
      const { RetentionJob } = await import('../../src/app/retention.js');
      const { SqlRetentionRepository } = await import('../../src/adapters/sql/retention-repository.js');
      const job = new RetentionJob({ store: new SqlRetentionRepository((server.storage as SqlStorage).context), clock: { now: () => new Date() }, logger: server.logger, retentionDays: 1 });
      expect((await job.runOnce()).telegram_updates).toBe(1);
      expect(await ids()).toEqual([3]);
      await job.stop();
    });

    it('prunes ended schedule fires past the window but never a schedule\'s latest (start-up recovery arms the next fire from it), and a deleted schedule\'s', async () => {
      const schedule = await server.request('POST', '/api/schedules', { body: { name: 'every day', timing: { kind: 'cron', cron: '0 9 * * *' }, task: 'Report.' } });
      expect(schedule.status).toBe(201);
      const scheduleId = schedule.body.id as string;
      const fire = async (id: string, ofSchedule: string, scheduledDaysAgo: number, endedDaysAgo: number | null) => {
        await db()
          .insertInto('schedule_fires')
          .values({ id, schedule_id: ofSchedule, user_id: 'alice', scheduled_for: ago(scheduledDaysAgo), status: endedDaysAgo === null ? 'running' : 'succeeded', reason: null, run_id: null, thread_id: null, started_at: ago(scheduledDaysAgo), ended_at: endedDaysAgo === null ? null : ago(endedDaysAgo) })
          .execute();
      };
      await fire('fire-old', scheduleId, 50, 50);
      await fire('fire-old-2', scheduleId, 45, 45);
      await fire('fire-latest-old', scheduleId, 40, 40); // the schedule's latest: kept however old
      await fire('fire-gone-1', 'deleted-schedule', 60, 60);
      await fire('fire-gone-2', 'deleted-schedule', 50, 50);
      await fire('fire-other-running', 'other-schedule', 41, null); // never ended: kept
      expect(await server.services.retention.runOnce()).toEqual({ ...none, schedule_fires: 4 });
      const left = (await db().selectFrom('schedule_fires').select('id').execute()).map((row) => row.id).sort();
      expect(left).toEqual(['fire-latest-old', 'fire-other-running']);
      // Alice's schedule still lists its latest fire.
      expect((await server.request('GET', `/api/schedules/${scheduleId}/fires`)).body.fires.map((entry: { id: string }) => entry.id)).toEqual(['fire-latest-old']);
    });

    it('prunes LangGraph-protocol run rows past the window once their run\'s record is gone, never one whose run is still recorded', async () => {
      const protocolRun = async (runId: string, vigilRunId: string | null, createdDaysAgo: number) => {
        await db()
          .insertInto('protocol_runs')
          .values({ run_id: runId, user_id: 'alice', thread_id: 't', assistant_id: 'agent', metadata: '{}', multitask_strategy: 'reject', state: vigilRunId === null ? 'cancelled' : 'started', vigil_run_id: vigilRunId, created_at: ago(createdDaysAgo) })
          .execute();
      };
      await run('p-run-old', 'succeeded', ago(40), ago(40)); // its record goes in the same pass, then its row
      await run('p-run-waiting', 'running', null, ago(40)); // still recorded: its row stays
      await protocolRun('p-old', 'p-run-old', 40);
      await protocolRun('p-never-started', null, 35);
      await protocolRun('p-waiting', 'p-run-waiting', 40);
      await protocolRun('p-recent', null, 2);
      expect(await server.services.retention.runOnce()).toEqual({ ...none, runs: 1, protocol_runs: 2 });
      const left = (await db().selectFrom('protocol_runs').select('run_id').execute()).map((row) => row.run_id).sort();
      expect(left).toEqual(['p-recent', 'p-waiting']);
    });

    it('deletes in bounded batches until nothing old is left', async () => {
      for (let index = 0; index < 7; index += 1) await run(`batch-${index}`, 'succeeded', ago(60), ago(60));
      const { RetentionJob } = await import('../../src/app/retention.js');
      const { SqlRetentionRepository } = await import('../../src/adapters/sql/retention-repository.js');
      const job = new RetentionJob({ store: new SqlRetentionRepository((server.storage as SqlStorage).context), clock: { now: () => new Date() }, logger: server.logger, retentionDays: 30, batchSize: 3 });
      expect((await job.runOnce()).runs).toBe(7);
      await job.stop();
    });
  });
}
