import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import pino from 'pino';
import { PostgresThreadLocks } from '../../src/adapters/locks/postgres-thread-locks.js';
import { PROCESS_ENDED_REASON } from '../../src/app/runs/orphaned-run-sweeper.js';
import { randomSchemaName } from '../helpers/postgres.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { ALICE, BOB, startTestServer, type Backend, type TestServer } from '../helpers/test-server.js';
import { subscribeToThread } from '../helpers/thread-socket.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * Runs a dead process left `running` are ended by the sweep, and only those: a run whose
 * thread lock is held (here, or on another instance) is alive and left alone.
 */
export function orphanedRunsSuite(backend: () => Backend): void {
  describe('runs left running by a dead process', () => {
    let server: TestServer;
    const schema = randomSchemaName();
    beforeAll(async () => {
      // Slow tokens: a live run stays live while the sweep looks at it.
      server = await startTestServer(backend(), { demoTokenDelayMs: 40, place: { dataDir: await makeTempDir(), schema } });
    });
    afterAll(async () => {
      await server?.destroy();
    });

    /** A run record as a process that died mid-run leaves it: `running`, its lock gone with the process. */
    async function deadProcessRun(threadId: string): Promise<string> {
      const runId = `run-dead-${Math.random().toString(36).slice(2)}`;
      const at = new Date(Date.now() - 60_000).toISOString();
      await server.storage.runs.create({ id: runId, threadId, userId: ALICE.id, agentId: 'default', trigger: 'user', meta: {}, correlationId: runId, model: 'demo', requestedAt: at, startedAt: at });
      return runId;
    }

    async function newThread(): Promise<string> {
      const created = await server.request('POST', '/api/threads', { body: {} });
      expect(created.status).toBe(201);
      return created.body.id as string;
    }

    it('a run whose process died is ended as failed with the reason, and run.end is announced', async () => {
      const threadId = await newThread();
      const runId = await deadProcessRun(threadId);
      const { events, socket } = await subscribeToThread(server, threadId);
      try {
        expect((await server.request('GET', `/api/runs/${runId}`)).body.status).toBe('running');
        expect(await server.services.orphanedRuns.sweepOnce()).toBeGreaterThanOrEqual(1);
        const run = await server.request('GET', `/api/runs/${runId}`);
        expect(run.body).toMatchObject({ status: 'failed', reason: PROCESS_ENDED_REASON });
        expect(run.body.endedAt).toEqual(expect.any(String));
        await waitFor(() => events.some((event) => event.type === 'run.end' && event.runId === runId), 10_000, 'run.end of the swept run');
        expect(events.find((event) => event.type === 'run.end' && event.runId === runId)).toMatchObject({ status: 'failed', reason: PROCESS_ENDED_REASON, error: { code: 'INTERNAL' } });
        // The thread goes on: a person's next message gets its answer.
        const next = await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'still there?' } });
        expect(next.status).toBe(200);
        expect(next.body.run.status).toBe('succeeded');
        // Bob cannot see the run either way.
        expect((await server.request('GET', `/api/runs/${runId}`, { token: BOB.token })).status).toBe(404);
      } finally {
        socket.close();
      }
    });

    it('a LangGraph run is not refused as busy because of a run whose process died: that run is ended at once, as the sweep would', async () => {
      const threadId = await newThread();
      const deadRunId = await deadProcessRun(threadId);
      // multitask_strategy "reject" (the default): a run in progress would make this a 409.
      const started = await server.request('POST', `/threads/${threadId}/runs/wait`, { body: { assistant_id: 'default', input: { messages: [{ type: 'human', content: 'anyone there?' }] } } });
      expect(started.status).toBe(200);
      expect((await server.request('GET', `/api/runs/${deadRunId}`)).body).toMatchObject({ status: 'failed', reason: PROCESS_ENDED_REASON });
      // Bob's run on his own thread does not reach Alice's dead run; and her thread stays hers.
      expect((await server.request('POST', `/threads/${threadId}/runs/wait`, { token: BOB.token, body: { assistant_id: 'default', input: { messages: [{ type: 'human', content: 'hi' }] } } })).status).toBe(404);
    });

    it('a live run (its thread lock held in this process) is left running and ends on its own', async () => {
      const threadId = await newThread();
      const reply = server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'take your time' } });
      let runId = '';
      await waitFor(async () => {
        const runs = await server.request('GET', `/api/threads/${threadId}/runs?limit=5`);
        runId = runs.body.runs?.[0]?.status === 'running' ? (runs.body.runs[0].id as string) : '';
        return runId !== '';
      }, 10_000, 'the run to start');
      await server.services.orphanedRuns.sweepOnce();
      expect((await server.request('GET', `/api/runs/${runId}`)).body.status).toBe('running');
      const answered = await reply;
      expect(answered.status).toBe(200);
      expect((await server.request('GET', `/api/runs/${runId}`)).body.status).toBe('succeeded');
    });

    if (backend().kind === 'postgres') {
      it('a run whose thread lock another instance holds is left alone until that instance dies (PostgreSQL)', async () => {
        const target = backend();
        if (target.kind !== 'postgres') throw new Error('PostgreSQL only');
        const threadId = await newThread();
        const runId = await deadProcessRun(threadId);
        const other = await PostgresThreadLocks.open({ connectionString: target.url, schema, logger: pino({ level: 'silent' }) });
        const lease = await other.acquire(threadId);
        await server.services.orphanedRuns.sweepOnce();
        expect((await server.request('GET', `/api/runs/${runId}`)).body.status).toBe('running');
        // The other instance dies (kill -9): PostgreSQL ends its sessions and releases its locks.
        const admin = new pg.Client({ connectionString: target.url });
        await admin.connect();
        try {
          const killed = await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [other.applicationName]);
          expect(killed.rowCount).toBeGreaterThanOrEqual(1);
        } finally {
          await admin.end();
        }
        await lease.release();
        await other.close();
        await waitFor(async () => {
          await server.services.orphanedRuns.sweepOnce();
          return (await server.request('GET', `/api/runs/${runId}`)).body.status === 'failed';
        }, 10_000, 'the run to be ended once the other instance is gone');
      });
    }
  });
}
