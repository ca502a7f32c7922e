import pg from 'pg';
import pino from 'pino';
import { expect, it } from 'vitest';
import { PostgresThreadLocks } from '../../src/adapters/locks/postgres-thread-locks.js';
import { describePostgres, postgresTarget, randomSchemaName } from '../helpers/postgres.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { startTestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';

const postgres = await postgresTarget();

/**
 * A graceful stop while a person's message waits for a thread that another instance's
 * run holds: the stop does not wait for that run. The waiting run is called off (the
 * message was never accepted, so nothing of it is stored), and its wait in PostgreSQL is
 * cancelled, which is what lets the instance close its lock connections.
 */
describePostgres('stopping an instance whose run waits for another instance (PostgreSQL)', postgres, () => {
  it('I8: the stop calls off the waiting run at once; the other instance keeps its thread; nothing half-written', async () => {
    const place = { dataDir: await makeTempDir(), schema: randomSchemaName() };
    const backend = { kind: 'postgres' as const, url: postgres.url };
    let server = await startTestServer(backend, { place });
    const other = await PostgresThreadLocks.open({ connectionString: postgres.url, schema: place.schema, logger: pino({ level: 'silent' }) });
    const admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
    try {
      const created = await server.request('POST', '/api/threads', { body: {} });
      const threadId = created.body.id as string;
      // Another instance's run holds the thread.
      const held = await other.acquire(threadId);
      const lockWaits = async () =>
        (
          await admin.query(
            `SELECT count(*)::int AS waits FROM pg_stat_activity
              WHERE application_name LIKE 'vigil-thread-locks %' AND application_name <> $1 AND wait_event_type = 'Lock' AND query LIKE '%pg_advisory_lock%'`,
            [other.applicationName],
          )
        ).rows[0].waits as number;
      const sent = server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'are you there?' } });
      await waitFor(async () => (await lockWaits()) === 1, 10_000, 'the message to wait for the thread in PostgreSQL');

      // Without the wait called off, this close waits for the other instance's run.
      await server.close();
      const answer = await sent;
      expect(server.undocumented).toEqual([]);
      expect(answer.status).toBe(499);
      expect(answer.body.error.code).toBe('RUN_CANCELLED');
      expect(await lockWaits()).toBe(0);
      // The other instance still holds its thread: the stop did not touch it.
      expect(await other.tryAcquire(threadId)).toBeUndefined();
      await held.release();

      // The message was never accepted: nothing of it (message, run) was stored.
      server = await startTestServer(backend, { place });
      const history = await server.request('GET', `/api/threads/${threadId}/history`);
      expect(history.status).toBe(200);
      expect(history.body.messages).toEqual([]);
      const runs = await server.request('GET', `/api/threads/${threadId}/runs`);
      expect(runs.body.runs).toEqual([]);
    } finally {
      await admin.end();
      await other.close();
      await server.destroy();
    }
  });

  it("I8: the stop calls off a thread's deletion waiting behind another instance's run (503 SERVER_STOPPING, the thread kept)", async () => {
    const place = { dataDir: await makeTempDir(), schema: randomSchemaName() };
    const backend = { kind: 'postgres' as const, url: postgres.url };
    let server = await startTestServer(backend, { place });
    const other = await PostgresThreadLocks.open({ connectionString: postgres.url, schema: place.schema, logger: pino({ level: 'silent' }) });
    const admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
    try {
      const threadId = (await server.request('POST', '/api/threads', { body: {} })).body.id as string;
      const held = await other.acquire(threadId);
      const deleting = server.request('DELETE', `/api/threads/${threadId}`);
      await waitFor(
        async () =>
          (
            await admin.query(`SELECT count(*)::int AS waits FROM pg_stat_activity WHERE application_name LIKE 'vigil-thread-locks %' AND application_name <> $1 AND wait_event_type = 'Lock'`, [other.applicationName])
          ).rows[0].waits === 1,
        10_000,
        'the deletion to wait for the thread in PostgreSQL',
      );
      await server.close();
      const answer = await deleting;
      expect(answer.status).toBe(503);
      expect(answer.body.error.code).toBe('SERVER_STOPPING');
      expect(server.undocumented).toEqual([]);
      await held.release();
      server = await startTestServer(backend, { place });
      expect((await server.request('GET', `/api/threads/${threadId}`)).status).toBe(200);
    } finally {
      await admin.end();
      await other.close();
      await server.destroy();
    }
  });
});
