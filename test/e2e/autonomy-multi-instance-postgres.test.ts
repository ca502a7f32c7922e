/**
 * Three real server processes on one PostgreSQL database and 1,000 follow-up timers, all
 * due at once: each fires exactly once (I7) — one run, one synthetic message and one
 * reply per timer — whichever instance takes it (the job table hands each job to one worker;
 * the thread's advisory lock and the timer's conditional fire keep a repeat out).
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { EmbeddedJobQueue } from '../../src/adapters/jobs/embedded-job-queue.js';
import { PostgresListener } from '../../src/adapters/sql/postgres-listener.js';
import { openPostgresStorage } from '../../src/adapters/sql/postgres-storage.js';
import type { SqlStorage } from '../../src/adapters/sql/sql-storage.js';
import { SqlTimerRepository } from '../../src/adapters/sql/timer-repository.js';
import { FOLLOW_UP_QUEUE } from '../../src/app/autonomy/autonomy-dependencies.js';
import { LOCAL_USER_ID } from '../../src/config.js';
import { describePostgres, dropSchema, postgresTarget, randomSchemaName } from '../helpers/postgres.js';
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { makeTempDir, removeTempDir } from '../helpers/temp-dir.js';

const postgres = await postgresTarget();
const TIMERS = 1_000;
const INSTANCES = 3;

describePostgres('autonomy: three instances, one database', postgres, () => {
  const schema = randomSchemaName('vigil_e2e');
  const logger = pino({ level: 'silent' });
  let servers: ServerProcess[] = [];
  let storage: SqlStorage | undefined;
  let queue: EmbeddedJobQueue | undefined;
  let listener: PostgresListener | undefined;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await makeTempDir('vigil-e2e-fleet-');
    servers = await Promise.all(
      Array.from({ length: INSTANCES }, () => startServerProcess({ DATABASE_URL: postgres.url, VIGIL_DATABASE_SCHEMA: schema, VIGIL_DATA_DIR: dataDir }, 60_000)),
    );
  }, 120_000);

  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop('SIGKILL')));
    await queue?.stop();
    await listener?.close();
    await storage?.close();
    await dropSchema(schema, postgres.url);
    await removeTempDir(dataDir);
  });

  it(`I7: ${TIMERS} timers due at once fire exactly once each across ${INSTANCES} server processes`, async () => {
    const created = await fetch(`${servers[0]!.url}/api/agents`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'fleet', name: 'Fleet', autonomy: { enabled: true, maxPerSilence: 1, maxPerDay: 5, modelCallsPerDay: 100_000, minDelayMs: 10 } }),
    });
    expect(created.status).toBe(201);

    // The timers are written as the scheduler writes them — timer row and its job (the due-timer
    // job table on PostgreSQL) in one transaction — from this process, which runs no workers.
    storage = await openPostgresStorage({ connectionString: postgres.url, schema, logger });
    listener = await PostgresListener.open(postgres.url, logger);
    queue = new EmbeddedJobQueue({ context: storage.context, clock: { now: () => new Date() }, logger, wakeUps: { listener, schema } });
    const timers = new SqlTimerRepository(storage.context);
    const dueAt = new Date(Date.now() + 12_000);
    const ids: string[] = [];
    const now = () => new Date().toISOString();
    // A few at a time: PostgreSQL's 100 connections are shared with the three servers (and other suites).
    for (let batch = 0; batch < TIMERS; batch += 8) {
      await Promise.all(
        Array.from({ length: Math.min(8, TIMERS - batch) }, async () => {
          const thread = await storage!.threads.create({ id: randomUUID(), userId: LOCAL_USER_ID, agentId: 'fleet', title: null }, now());
          const id = randomUUID();
          ids.push(id);
          await timers.insert(
            { id, threadId: thread.id, userId: LOCAL_USER_ID, agentId: 'fleet', dueAt: dueAt.toISOString(), triggerType: 'check_in', reason: 'fleet test', attempt: 1, state: 'pending', stateReason: null, scheduledAgainst: null, sourceRunId: null },
            now(),
            async (within) => void (await queue!.schedule({ queue: FOLLOW_UP_QUEUE, key: id, dueAt, payload: { timerId: id } }, { within })),
          );
        }),
      );
    }
    // Usually all are written before any comes due; on a loaded machine some come due while
    // the rest are written — exactly once must hold either way.
    const writtenLateBy = Math.max(0, Date.now() - dueAt.getTime());

    await queue.stop(); // this process only wrote; its connections are better spent by the servers
    queue = undefined;
    const db = storage.context.db;
    const started = Date.now();
    for (;;) {
      const { rows } = await sql<{ fired: string; open: string }>`
        SELECT (SELECT count(*) FROM timers WHERE state = 'fired' AND source_run_id IS NULL) AS fired,
               (SELECT count(*) FROM runs WHERE trigger = 'autonomy' AND status = 'running') AS open`.execute(db);
      if (Number(rows[0]!.fired) === TIMERS && Number(rows[0]!.open) === 0) break;
      if (Date.now() - started > 240_000) throw new Error(`timed out: ${JSON.stringify(rows[0])}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const firedIn = (Date.now() - Math.max(started, dueAt.getTime())) / 1000;
    await new Promise((resolve) => setTimeout(resolve, 3_000)); // time for any repeat to show itself

    const runsPerTimer = await sql<{ timer_id: string; runs: string; succeeded: string }>`
      SELECT meta::jsonb->>'timer_id' AS timer_id, count(*) AS runs, count(*) FILTER (WHERE status = 'succeeded') AS succeeded
      FROM runs WHERE trigger = 'autonomy' GROUP BY 1`.execute(db);
    expect(runsPerTimer.rows).toHaveLength(TIMERS);
    expect(new Set(runsPerTimer.rows.map((row) => row.timer_id))).toEqual(new Set(ids));
    expect(runsPerTimer.rows.every((row) => Number(row.runs) === 1 && Number(row.succeeded) === 1)).toBe(true);

    const messages = await sql<{ synthetic: string; distinct_synthetic: string; replies: string; threads_with_one_reply: string }>`
      SELECT count(*) FILTER (WHERE message_id LIKE 'follow-up-%') AS synthetic,
             count(DISTINCT message_id) FILTER (WHERE message_id LIKE 'follow-up-%') AS distinct_synthetic,
             count(*) FILTER (WHERE type = 'ai') AS replies,
             (SELECT count(*) FROM (SELECT thread_id FROM thread_history WHERE type = 'ai' GROUP BY thread_id HAVING count(*) = 1) AS one) AS threads_with_one_reply
      FROM thread_history`.execute(db);
    expect(messages.rows[0]).toEqual({ synthetic: String(TIMERS), distinct_synthetic: String(TIMERS), replies: String(TIMERS), threads_with_one_reply: String(TIMERS) });

    const linked = await sql<{ linked: string }>`
      SELECT count(*) AS linked FROM timers t JOIN runs r ON r.id = t.run_id WHERE t.state = 'fired' AND r.meta::jsonb->>'timer_id' = t.id`.execute(db);
    expect(Number(linked.rows[0]!.linked)).toBe(TIMERS);

    const perInstance = servers.map((server) => server.output().split('\n').filter((line) => line.includes('"msg":"follow-up fired"')).length);
    console.info(`[fleet] ${TIMERS} timers fired in ${firedIn.toFixed(1)} s after coming due (writing ended ${writtenLateBy} ms after); per instance: ${perInstance.join(', ')}`);
    expect(perInstance.reduce((sum, count) => sum + count, 0)).toBe(TIMERS);
    expect(perInstance.filter((count) => count > 0).length).toBeGreaterThan(1);

    const stops = await Promise.all(servers.map((server) => server.stop('SIGTERM')));
    expect(stops.map((stop) => stop.code)).toEqual(Array(INSTANCES).fill(0));
  }, 420_000);
});
