import pg from 'pg';
import pino from 'pino';
import { expect, it } from 'vitest';
import { PostgresThreadLocks } from '../../src/adapters/locks/postgres-thread-locks.js';
import { describePostgres, postgresTarget, randomSchemaName } from '../helpers/postgres.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { ALICE, BOB, startTestServer } from '../helpers/test-server.js';
import { openSocket } from '../helpers/thread-socket.js';
import { waitFor } from '../helpers/wait-for.js';

const postgres = await postgresTarget();

/**
 * Two instances on one database. A person's message waits on instance A for a thread that a
 * run elsewhere holds; its id was handed out when it was accepted, and the cancel reaches
 * instance B (a load balancer picks any). B has no record of it and no such run of its own:
 * it answered 404, and the message ran later anyway.
 */
describePostgres('cancelling a message that waits for its thread on another instance (PostgreSQL)', postgres, () => {
  it('I12: the cancel reaches the instance where it waits: it never runs, its record says cancelled on every instance; another user cannot cancel it', async () => {
    const place = { dataDir: await makeTempDir(), schema: randomSchemaName() };
    const backend = { kind: 'postgres' as const, url: postgres.url };
    const other = await PostgresThreadLocks.open({ connectionString: postgres.url, schema: place.schema, logger: pino({ level: 'silent' }) });
    const admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
    const waitingForLocks = async () =>
      (
        await admin.query(
          `SELECT count(*)::int AS waits FROM pg_stat_activity
            WHERE application_name LIKE 'vigil-thread-locks %' AND application_name <> $1 AND wait_event_type = 'Lock' AND query LIKE '%pg_advisory_lock%'`,
          [other.applicationName],
        )
      ).rows[0].waits as number;
    const first = await startTestServer(backend, { place });
    const second = await startTestServer(backend, { place });
    let releaseThread: (() => Promise<void>) | undefined;
    try {
      const threadId = (await first.request('POST', '/api/threads', { body: {} })).body.id as string;
      const held = await other.acquire(threadId);
      releaseThread = () => held.release();
      const { socket, frames, send } = await openSocket(first, ALICE.token);
      send({ type: 'message.send', threadId, content: 'never mind this', requestId: 'queued' });
      await waitFor(() => frames.some((frame) => frame.type === 'message.accepted'), 10_000, 'the message accepted');
      await waitFor(async () => (await waitingForLocks()) === 1, 10_000, 'the message to wait for its thread on the first instance');
      const runId = frames.find((frame) => frame.type === 'message.accepted')!.runId as string;

      // I12: Bob names Alice's run on the second instance: not found, and it still waits.
      const bobs = await second.request('POST', `/api/runs/${runId}/cancel`, { token: BOB.token });
      expect(bobs.status).toBe(404);
      expect(bobs.body.error.code).toBe('RUN_NOT_FOUND');
      expect(await waitingForLocks()).toBe(1);

      const cancelled = await second.request('POST', `/api/runs/${runId}/cancel`);
      expect(cancelled.status).toBe(202);
      expect(cancelled.body).toMatchObject({ id: runId, threadId, status: 'cancelled', trigger: 'user', correlationId: 'queued' });
      await waitFor(() => frames.some((frame) => frame.type === 'error' && frame.requestId === 'queued'), 10_000, "the sender told of the cancel");
      expect(frames.find((frame) => frame.type === 'error')).toMatchObject({ code: 'RUN_CANCELLED', threadId, requestId: 'queued' });
      await waitFor(async () => (await waitingForLocks()) === 0, 10_000, 'the wait for the thread to be called off');

      // The thread comes free: the message does not run, and both instances tell the same.
      await held.release();
      releaseThread = undefined;
      const next = await first.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'and this one' } });
      expect(next.status).toBe(200);
      socket.close();
      expect(frames.some((frame) => frame.type === 'run.start' && frame.runId === runId)).toBe(false);
      for (const server of [first, second]) {
        expect((await server.request('GET', `/api/runs/${runId}`)).body).toMatchObject({ id: runId, status: 'cancelled' });
        expect((await server.request('GET', `/api/runs/${runId}`, { token: BOB.token })).status).toBe(404);
        const history = await server.request('GET', `/api/threads/${threadId}/history?include=internal`);
        expect(history.body.messages.map((message: { content: unknown }) => message.content)).not.toContain('never mind this');
      }
      expect(first.undocumented).toEqual([]);
      expect(second.undocumented).toEqual([]);
    } finally {
      // A failure above leaves the thread held: freed first, so no instance's stop waits for it.
      await releaseThread?.();
      await admin.end();
      await other.close();
      await second.destroy();
      await first.destroy();
    }
  });
});
