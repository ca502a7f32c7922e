/**
 * Upgrading from a version whose due timers were pg-boss jobs: their pending jobs move to
 * the job table the due-timer scheduler reads (pg-boss-timer-handover.ts), once, however
 * many instances start at once. The earlier version is played by PgBossJobQueue, which
 * wrote those jobs then and writes the other queues' jobs now.
 */
import { pino } from 'pino';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openJobQueue } from '../../src/adapters/jobs/job-queue-factory.js';
import type { JobTables } from '../../src/adapters/jobs/jobs-table.js';
import { PgBossJobQueue, pgBossSchemaFor } from '../../src/adapters/jobs/pg-boss-job-queue.js';
import { PostgresListener } from '../../src/adapters/sql/postgres-listener.js';
import { openPostgresStorage } from '../../src/adapters/sql/postgres-storage.js';
import type { SqlStorage } from '../../src/adapters/sql/sql-storage.js';
import { FOLLOW_UP_QUEUE } from '../../src/app/autonomy/autonomy-dependencies.js';
import { CHECK_IN_QUEUE } from '../../src/app/check-ins/check-in-service.js';
import type { JobQueue } from '../../src/app/job-queue.js';
import { OUTBOUND_QUEUE } from '../../src/app/outbound/outbound-webhook-service.js';
import { SCHEDULE_QUEUE } from '../../src/app/schedules/schedule-service.js';
import { describePostgres, dropSchema, postgresTarget, randomSchemaName } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait-for.js';

const logger = pino({ level: 'silent' });
const clock = { now: () => new Date() };
const postgres = await postgresTarget();

describePostgres('due timers an earlier version left in pg-boss', postgres, () => {
  const schema = randomSchemaName();
  let storage: SqlStorage;
  const listeners: PostgresListener[] = [];
  const queues: JobQueue[] = [];

  beforeAll(async () => {
    storage = await openPostgresStorage({ connectionString: postgres.url, schema, logger });
  });
  afterAll(async () => {
    await Promise.all(queues.map((queue) => queue.stop()));
    await Promise.all(listeners.map((listener) => listener.close()));
    await storage?.close();
    await dropSchema(schema, postgres.url);
  });

  async function pgBossQuery(text: string): Promise<unknown[]> {
    const client = new pg.Client({ connectionString: postgres.url });
    await client.connect();
    try {
      return (await client.query(text)).rows;
    } finally {
      await client.end();
    }
  }

  it('I7: pending follow-ups, check-ins and schedule fires move to the job table once, with two instances starting at once', async () => {
    const past = new Date(Date.now() - 60_000);
    const inAnHour = new Date(Math.floor(Date.now() / 1000) * 1000 + 3_600_000);
    const earlier = new PgBossJobQueue({ connectionString: postgres.url, schema: pgBossSchemaFor(schema), logger });
    await earlier.schedule({ queue: FOLLOW_UP_QUEUE, key: 'timer-due', dueAt: past, payload: { timerId: 'timer-due' } });
    await earlier.schedule({ queue: CHECK_IN_QUEUE, key: 'check-in-due', dueAt: past, payload: { checkInId: 'check-in-due' } });
    await earlier.schedule({ queue: FOLLOW_UP_QUEUE, key: 'timer-later', dueAt: inAnHour, payload: { timerId: 'timer-later' } });
    await earlier.schedule({ queue: SCHEDULE_QUEUE, key: `daily@${inAnHour.toISOString()}`, dueAt: inAnHour, payload: { scheduleId: 'daily', scheduledFor: inAnHour.toISOString() } });
    await earlier.schedule({ queue: OUTBOUND_QUEUE, key: 'delivery', dueAt: inAnHour, payload: { deliveryId: 'delivery' } });
    await earlier.schedule({ queue: FOLLOW_UP_QUEUE, key: 'timer-taken', dueAt: past, payload: { timerId: 'timer-taken' } });
    await earlier.stop();
    // Taken by a worker of the earlier version that stopped before it finished.
    await pgBossQuery(`UPDATE "${pgBossSchemaFor(schema)}".job SET state = 'active', started_on = now() WHERE singleton_key = 'timer-taken'`);

    const delivered = new Map<string, number[]>(); // key → the attempt of each delivery
    for (let instance = 0; instance < 2; instance++) {
      const listener = await PostgresListener.open(postgres.url, logger);
      listeners.push(listener);
      const queue = openJobQueue({ storage, databaseUrl: postgres.url, schema, clock, logger, listener });
      queues.push(queue);
      for (const name of [FOLLOW_UP_QUEUE, CHECK_IN_QUEUE, SCHEDULE_QUEUE]) await queue.work(name, async (job) => void delivered.set(job.key, [...(delivered.get(job.key) ?? []), job.attempt]));
    }
    await Promise.all(queues.map((queue) => queue.start()));

    const jobs = storage.context.db.withTables<JobTables>();
    const rows = () => jobs.selectFrom('vigil_jobs').select(['queue', 'key', 'due_at', 'payload', 'state', 'attempt']).orderBy('key').execute();
    await waitFor(async () => delivered.size === 3 && (await rows()).length === 2, 15_000, 'the timers that came due while they sat in pg-boss, delivered and settled');
    // A later start (a third instance, a restart) finds nothing more to move.
    const later = openJobQueue({ storage, databaseUrl: postgres.url, schema, clock, logger, listener: listeners[0]! });
    queues.push(later);
    await later.start();
    const pending = await rows();
    expect(pending.map((job) => ({ ...job, due_at: new Date(job.due_at).toISOString(), payload: JSON.parse(job.payload) }))).toEqual([
      { queue: SCHEDULE_QUEUE, key: `daily@${inAnHour.toISOString()}`, due_at: inAnHour.toISOString(), payload: { scheduleId: 'daily', scheduledFor: inAnHour.toISOString() }, state: 'pending', attempt: 0 },
      { queue: FOLLOW_UP_QUEUE, key: 'timer-later', due_at: inAnHour.toISOString(), payload: { timerId: 'timer-later' }, state: 'pending', attempt: 0 },
    ]);
    // Gone from pg-boss; the other queues' jobs stay there, where they are still worked.
    expect(await pgBossQuery(`SELECT name, singleton_key, state::text FROM "${pgBossSchemaFor(schema)}".job`)).toEqual([{ name: OUTBOUND_QUEUE, singleton_key: 'delivery', state: 'created' }]);
    // Once each; the taken one as its second delivery.
    expect(Object.fromEntries(delivered)).toEqual({ 'timer-due': [1], 'check-in-due': [1], 'timer-taken': [2] });
  });
});
