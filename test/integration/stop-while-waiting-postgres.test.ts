import pg from 'pg';
import pino from 'pino';
import { expect, it } from 'vitest';
import { PostgresThreadLocks } from '../../src/adapters/locks/postgres-thread-locks.js';
import { describePostgres, postgresTarget, randomSchemaName } from '../helpers/postgres.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';

const postgres = await postgresTarget();

interface Scene {
  /** The instance to stop (replaced by its restart when a test restarts it). */
  server: TestServer;
  restart(): Promise<TestServer>;
  /** Another instance's run holds the thread. */
  other: PostgresThreadLocks;
  /** Lock waits of the instance to stop in PostgreSQL. */
  lockWaits(): Promise<number>;
}

/** An instance and another one's thread locks on one schema; everything closed after `test`. */
async function withScene(test: (scene: Scene) => Promise<void>): Promise<void> {
  const place = { dataDir: await makeTempDir(), schema: randomSchemaName() };
  const backend = { kind: 'postgres' as const, url: postgres.url };
  const other = await PostgresThreadLocks.open({ connectionString: postgres.url, schema: place.schema, logger: pino({ level: 'silent' }) });
  const admin = new pg.Client({ connectionString: postgres.url });
  await admin.connect();
  const scene: Scene = {
    server: await startTestServer(backend, { place }),
    restart: async () => (scene.server = await startTestServer(backend, { place })),
    other,
    lockWaits: async () =>
      (
        await admin.query(
          `SELECT count(*)::int AS waits FROM pg_stat_activity
            WHERE application_name LIKE 'vigil-thread-locks %' AND application_name <> $1 AND wait_event_type = 'Lock' AND query LIKE '%pg_advisory_lock%'`,
          [other.applicationName],
        )
      ).rows[0].waits as number,
  };
  try {
    await test(scene);
  } finally {
    await admin.end();
    await other.close();
    await scene.server.destroy();
  }
}

/**
 * A graceful stop while a person's message waits for a thread that another instance's
 * run holds: the stop does not wait for that run. The waiting run is called off (the
 * message was never accepted, so nothing of it is stored), and its wait in PostgreSQL is
 * cancelled, which is what lets the instance close its lock connections.
 */
describePostgres('stopping an instance whose run waits for another instance (PostgreSQL)', postgres, () => {
  it('I8: the stop calls off the waiting run at once; the other instance keeps its thread; nothing half-written', async () => {
    await withScene(async (scene) => {
      const { server, other } = scene;
      const threadId = (await server.request('POST', '/api/threads', { body: {} })).body.id as string;
      const held = await other.acquire(threadId);
      const sent = server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'are you there?' } });
      await waitFor(async () => (await scene.lockWaits()) === 1, 10_000, 'the message to wait for the thread in PostgreSQL');

      // Without the wait called off, this close waits for the other instance's run.
      await server.close();
      const answer = await sent;
      expect(server.undocumented).toEqual([]);
      expect(answer.status).toBe(499);
      expect(answer.body.error.code).toBe('RUN_CANCELLED');
      expect(await scene.lockWaits()).toBe(0);
      // The other instance still holds its thread: the stop did not touch it.
      expect(await other.tryAcquire(threadId)).toBeUndefined();
      await held.release();

      // The message was never accepted: nothing of it (message, run) was stored.
      const restarted = await scene.restart();
      const history = await restarted.request('GET', `/api/threads/${threadId}/history`);
      expect(history.status).toBe(200);
      expect(history.body.messages).toEqual([]);
      const runs = await restarted.request('GET', `/api/threads/${threadId}/runs`);
      expect(runs.body.runs).toEqual([]);
    });
  });

  it("I8: the stop calls off a thread's deletion waiting behind another instance's run (503 SERVER_STOPPING, the thread kept)", async () => {
    await withScene(async (scene) => {
      const { server, other } = scene;
      const threadId = (await server.request('POST', '/api/threads', { body: {} })).body.id as string;
      const held = await other.acquire(threadId);
      const deleting = server.request('DELETE', `/api/threads/${threadId}`);
      await waitFor(async () => (await scene.lockWaits()) === 1, 10_000, 'the deletion to wait for the thread in PostgreSQL');
      await server.close();
      const answer = await deleting;
      expect(answer.status).toBe(503);
      expect(answer.body.error.code).toBe('SERVER_STOPPING');
      expect(server.undocumented).toEqual([]);
      await held.release();
      const restarted = await scene.restart();
      expect((await restarted.request('GET', `/api/threads/${threadId}`)).status).toBe(200);
    });
  });
});
