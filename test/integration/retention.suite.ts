import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SqlStorage } from '../../src/adapters/sql/sql-storage.js';
import type { HookTables } from '../../src/adapters/sql/hook-tables.js';
import type { TimerTables } from '../../src/adapters/sql/timer-tables.js';
import { startTestServer, type Backend, type TestServer } from '../helpers/test-server.js';

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

    const db = () => (server.storage as SqlStorage).context.db.withTables<HookTables & TimerTables>();

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
      expect(deleted).toEqual({ runs: 2, timers: 2, hook_deliveries: 1 });
      const runs = (await db().selectFrom('runs').select('id').execute()).map((row) => row.id).sort();
      expect(runs).toEqual(['run-old-running', 'run-recent']);
      const timers = (await db().selectFrom('timers').select('id').execute()).map((row) => row.id).sort();
      expect(timers).toEqual(['timer-old-pending', 'timer-recent']);
      const deliveries = (await db().selectFrom('hook_deliveries').select('delivery_id').execute()).map((row) => row.delivery_id);
      expect(deliveries).toEqual(['new']);
      expect(server.logs.some((line) => line.msg === 'retention pass done')).toBe(true);
      // A second pass finds nothing more.
      expect(await server.services.retention.runOnce()).toEqual({ runs: 0, timers: 0, hook_deliveries: 0 });
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
