import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedJobQueue } from '../../src/adapters/jobs/embedded-job-queue.js';
import type { JobTables } from '../../src/adapters/jobs/jobs-table.js';
import { openSqliteStorage } from '../../src/adapters/sql/sqlite-storage.js';
import type { SqlStorage } from '../../src/adapters/sql/sql-storage.js';
import type { DueJob } from '../../src/app/job-queue.js';
import { openJobQueue } from '../../src/adapters/jobs/job-queue-factory.js';
import { FOLLOW_UP_QUEUE } from '../../src/app/autonomy/autonomy-dependencies.js';
import { CHECK_IN_QUEUE } from '../../src/app/check-ins/check-in-service.js';
import { OUTBOUND_QUEUE } from '../../src/app/outbound/outbound-webhook-service.js';
import { SCHEDULE_QUEUE } from '../../src/app/schedules/schedule-service.js';
import { makeTempDir, removeTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';
import { jobQueueContract } from './job-queue.contract.js';

const logger = pino({ level: 'silent' });
const clock = { now: () => new Date() };

jobQueueContract('embedded scheduler on SQLite', async () => {
  const dir = await makeTempDir('vigil-jobs-');
  const storage = await openSqliteStorage({ file: join(dir, 'jobs.sqlite'), logger });
  return {
    storage,
    newQueue: () => new EmbeddedJobQueue({ context: storage.context, clock, logger, retryBaseMs: 100 }),
    slackMs: 150,
    close: async () => {
      await storage.close();
      await removeTempDir(dir);
    },
  };
});

describe('embedded scheduler on SQLite: claims and sleeping', () => {
  let dir: string;
  let storage: SqlStorage;

  beforeAll(async () => {
    dir = await makeTempDir('vigil-jobs-');
    storage = await openSqliteStorage({ file: join(dir, 'jobs.sqlite'), logger });
  });
  afterAll(async () => {
    await storage.close();
    await removeTempDir(dir);
  });

  const sleep = (milliseconds: number) => new Promise((resolve) => setTimeout(resolve, milliseconds));

  it('I7: hands out again, once, a job whose worker died mid-job (its claim lapsed)', async () => {
    const now = new Date();
    const jobs = storage.context.db.withTables<JobTables>();
    await jobs
      .insertInto('vigil_jobs')
      .values({
        id: randomUUID(),
        queue: 'lapsed',
        key: 'orphan',
        due_at: new Date(now.getTime() - 60_000).toISOString(),
        payload: '{}',
        state: 'active',
        attempt: 1,
        lease_until: new Date(now.getTime() - 1_000).toISOString(),
        claimed_by: 'a-process-that-was-killed',
        last_error: null,
        created_at: now.toISOString(),
        updated_at: now.toISOString(),
      })
      .execute();
    const delivered: DueJob[] = [];
    const queue = new EmbeddedJobQueue({ context: storage.context, clock, logger });
    await queue.work('lapsed', async (job) => void delivered.push(job));
    await queue.start();
    await waitFor(() => delivered.length === 1, 10_000, 'the lapsed job');
    await queue.stop();
    expect(delivered.map((job) => [job.key, job.attempt])).toEqual([['orphan', 2]]);
    expect(await jobs.selectFrom('vigil_jobs').selectAll().where('queue', '=', 'lapsed').execute()).toEqual([]);
  });

  it('renews its claim while a handler runs, so a long job is not handed out twice', async () => {
    const queue = new EmbeddedJobQueue({ context: storage.context, clock, logger, leaseMs: 150 });
    const other = new EmbeddedJobQueue({ context: storage.context, clock, logger, leaseMs: 150 });
    let deliveries = 0;
    let finished = 0;
    const handler = async () => {
      deliveries++;
      // Several of its leases long: a claim not renewed would lapse meanwhile.
      await sleep(700);
      finished++;
    };
    await queue.work('long', handler);
    await queue.start();
    await queue.schedule({ queue: 'long', key: 'long-job', dueAt: new Date(), payload: {} });
    await waitFor(() => deliveries === 1, 10_000, 'the long job to start');
    await other.work('long', handler);
    await other.start();
    await waitFor(() => finished === 1, 10_000, 'the long job to finish');
    await Promise.all([queue.stop(), other.stop()]);
    expect(deliveries).toBe(1);
  });

  it('sleeps until the next due time and wakes when an earlier job is scheduled (no fixed poll)', async () => {
    const queue = new EmbeddedJobQueue({ context: storage.context, clock, logger });
    const delivered: Array<{ key: string; lateMs: number }> = [];
    await queue.work('wake', async (job) => void delivered.push({ key: job.key, lateMs: Date.now() - Date.parse(job.dueAt) }));
    await queue.start();
    await queue.schedule({ queue: 'wake', key: 'far', dueAt: new Date(Date.now() + 3_600_000), payload: {} });
    await sleep(50); // no signal says the scheduler is asleep now; this only makes it likely
    await queue.schedule({ queue: 'wake', key: 'soon', dueAt: new Date(Date.now() + 120), payload: {} });
    // Asleep until the far job, an hour away: only a wake delivers this one at all.
    await waitFor(() => delivered.length === 1, 10_000, 'the sooner job');
    await queue.stop();
    expect(delivered.map((entry) => entry.key)).toEqual(['soon']);
  });

  it('goes by its injected clock: a job due in an hour is delivered at once when the clock says it is an hour later', async () => {
    const later = { now: () => new Date(Date.now() + 3_600_000 + 1_000) };
    const queue = new EmbeddedJobQueue({ context: storage.context, clock: later, logger });
    const delivered: string[] = [];
    await queue.work('clocked', async (job) => void delivered.push(job.key));
    await queue.start();
    await queue.schedule({ queue: 'clocked', key: 'in-an-hour', dueAt: new Date(Date.now() + 3_600_000), payload: {} });
    await queue.schedule({ queue: 'clocked', key: 'in-two-hours', dueAt: new Date(Date.now() + 7_200_000), payload: {} });
    await waitFor(() => delivered.length === 1, 10_000, 'the job due an hour on');
    await queue.stop();
    expect(delivered).toEqual(['in-an-hour']);
  });

  it('hands out due jobs oldest first across its queues', async () => {
    const queues = ['oldest-a', 'oldest-b', 'oldest-c'];
    const queue = new EmbeddedJobQueue({ context: storage.context, clock, logger, concurrency: 1 });
    const delivered: string[] = [];
    for (const name of queues) await queue.work(name, async (job) => void delivered.push(job.key));
    const now = Date.now();
    // Minutes ago, interleaved across the queues: each key says its place in due order.
    const order = [5, 0, 3, 8, 1, 6, 4, 2, 7];
    for (const [index, place] of order.entries()) {
      await queue.schedule({ queue: queues[index % 3]!, key: `due-${place}`, dueAt: new Date(now - (10 - place) * 60_000), payload: {} });
    }
    await queue.start();
    await waitFor(() => delivered.length === order.length, 10_000, 'every due job');
    await queue.stop();
    expect(delivered).toEqual(order.map((_, place) => `due-${place}`));
  });

  it('I7: a burst due at once on several queues is delivered once per job, and every row is settled', async () => {
    const queues = ['burst-a', 'burst-b', 'burst-c'];
    const queue = new EmbeddedJobQueue({ context: storage.context, clock, logger, concurrency: 8 });
    const seen = new Map<string, number>();
    for (const name of queues) await queue.work(name, async (job) => void seen.set(`${job.queue}/${job.key}`, (seen.get(`${job.queue}/${job.key}`) ?? 0) + 1));
    await queue.start();
    const dueAt = new Date(Date.now() + 200);
    for (let index = 0; index < 90; index++) await queue.schedule({ queue: queues[index % 3]!, key: `job-${index}`, dueAt, payload: {} });
    const jobs = storage.context.db.withTables<JobTables>();
    const left = async () => (await jobs.selectFrom('vigil_jobs').select('id').where('queue', 'in', queues).execute()).length;
    await waitFor(async () => seen.size === 90 && (await left()) === 0, 15_000, 'every job delivered and its row deleted');
    await queue.stop();
    expect([...seen.values()].every((count) => count === 1)).toBe(true);
  });

  it('runs due timers VIGIL_TIMER_CONCURRENCY at once, beside the other queues\' own few, and counts each job once', async () => {
    // As main.ts builds it: a scheduler for the due timers and one for the rest, over one table.
    const queue = openJobQueue({ storage, databaseUrl: undefined, schema: 'main', clock, logger, timerConcurrency: 6 });
    const running = { timers: 0, outbound: 0 };
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const hold = (kind: keyof typeof running) => async () => {
      running[kind]++;
      await released;
    };
    for (const timerQueue of [FOLLOW_UP_QUEUE, CHECK_IN_QUEUE, SCHEDULE_QUEUE]) await queue.work(timerQueue, hold('timers'));
    await queue.work(OUTBOUND_QUEUE, hold('outbound'));
    await queue.start();
    const timerQueues = [FOLLOW_UP_QUEUE, CHECK_IN_QUEUE, SCHEDULE_QUEUE];
    for (let index = 0; index < 6; index++) {
      await queue.schedule({ queue: timerQueues[index % 3]!, key: `timer-${index}`, dueAt: new Date(), payload: {} });
      await queue.schedule({ queue: OUTBOUND_QUEUE, key: `delivery-${index}`, dueAt: new Date(), payload: {} });
    }
    // With one scheduler of 4 for every queue, six timers never run at once.
    await waitFor(() => running.timers === 6 && running.outbound === 4, 10_000, 'six timers and four other jobs running');
    expect(await queue.depth()).toEqual({ ready: 2, deferred: 0, active: 10 });
    release();
    await waitFor(() => running.outbound === 6, 10_000, 'the other jobs after the first four');
    await queue.stop();
  });

  it('parks a job that keeps failing after its last attempt', async () => {
    const queue = new EmbeddedJobQueue({ context: storage.context, clock, logger, maxAttempts: 2, retryBaseMs: 20 });
    let attempts = 0;
    await queue.work('doomed', async () => {
      attempts++;
      throw new Error('always');
    });
    await queue.start();
    await queue.schedule({ queue: 'doomed', key: 'd', dueAt: new Date(), payload: {} });
    const parked = () => storage.context.db.withTables<JobTables>().selectFrom('vigil_jobs').selectAll().where('queue', '=', 'doomed').executeTakeFirst();
    await waitFor(async () => (await parked())?.state === 'failed', 10_000, 'the job to be parked');
    await queue.stop();
    expect(attempts).toBe(2);
    const row = await parked();
    expect(row).toMatchObject({ state: 'failed', last_error: 'always', attempt: 2 });
  });
});
