/**
 * The JobQueue contract, written once and run against each adapter: the embedded
 * scheduler on SQLite (job-queue-sqlite.test.ts) and pg-boss on PostgreSQL
 * (job-queue-postgres.test.ts). Each case uses its own queue name, so cases share one
 * database without seeing each other's jobs.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DueJob, JobQueue, StorageTransaction } from '../../src/app/job-queue.js';
import type { SqlStorage } from '../../src/adapters/sql/sql-storage.js';
import { waitFor } from '../helpers/wait-for.js';

export interface JobQueueHarness {
  storage: SqlStorage;
  /** A new queue instance on the same database (another worker, or the same one after a restart). */
  newQueue(): JobQueue;
  /** How long past its due time a job may take to be delivered on this adapter (its polling). */
  slackMs: number;
  close(): Promise<void>;
}

export function jobQueueContract(name: string, open: () => Promise<JobQueueHarness>): void {
  describe(`JobQueue contract: ${name}`, () => {
    let harness: JobQueueHarness;
    const queues: JobQueue[] = [];

    beforeAll(async () => {
      harness = await open();
    });
    afterAll(async () => {
      await Promise.all(queues.map((queue) => queue.stop()));
      await harness?.close();
    });

    function started(): JobQueue {
      const queue = harness.newQueue();
      queues.push(queue);
      return queue;
    }

    function queueName(): string {
      return `test-${randomUUID().slice(0, 8)}`;
    }

    const sleep = (milliseconds: number) => new Promise((resolve) => setTimeout(resolve, milliseconds));

    // Waits for deliveries with the shared waitFor; the sleeps left below are windows in
    // which something must NOT happen (a second delivery), which no event can announce.
    const until = (condition: () => boolean, timeoutMs = 15_000) => waitFor(condition, timeoutMs, 'deliveries');

    it('I7: delivers a job once, at (not before) its due time, with its payload', async () => {
      const queue = started();
      const name = queueName();
      const delivered: Array<{ job: DueJob; at: number }> = [];
      await queue.work(name, async (job) => void delivered.push({ job, at: Date.now() }));
      await queue.start();
      const dueAt = new Date(Date.now() + 300);
      const { created } = await queue.schedule({ queue: name, key: 'k1', dueAt, payload: { hello: 'world', n: 1 } });
      expect(created).toBe(true);
      await until(() => delivered.length === 1);
      await sleep(harness.slackMs);
      expect(delivered).toHaveLength(1);
      const [first] = delivered;
      expect(first!.at).toBeGreaterThanOrEqual(dueAt.getTime() - 5);
      expect(first!.job).toMatchObject({ queue: name, key: 'k1', payload: { hello: 'world', n: 1 }, attempt: 1 });
      expect(Date.parse(first!.job.dueAt)).toBe(dueAt.getTime());
    });

    it('keeps one pending job per (queue, key): a second schedule answers the first job', async () => {
      const queue = started();
      const name = queueName();
      let deliveries = 0;
      await queue.work(name, async () => void deliveries++);
      await queue.start();
      const dueAt = new Date(Date.now() + 400);
      const first = await queue.schedule({ queue: name, key: 'same', dueAt, payload: { n: 1 } });
      const second = await queue.schedule({ queue: name, key: 'same', dueAt, payload: { n: 2 } });
      expect(first.created).toBe(true);
      expect(second).toEqual({ id: first.id, created: false });
      await until(() => deliveries >= 1);
      await sleep(harness.slackMs + 200);
      expect(deliveries).toBe(1);
    });

    it('cancels a pending job by key, and answers false when there is none', async () => {
      const queue = started();
      const name = queueName();
      let deliveries = 0;
      await queue.work(name, async () => void deliveries++);
      await queue.start();
      await queue.schedule({ queue: name, key: 'gone', dueAt: new Date(Date.now() + 300), payload: {} });
      expect(await queue.cancel(name, 'gone')).toBe(true);
      expect(await queue.cancel(name, 'gone')).toBe(false);
      expect(await queue.cancel(name, 'never-scheduled')).toBe(false);
      await sleep(300 + harness.slackMs + 200);
      expect(deliveries).toBe(0);
    });

    it('I7: a job that came due while no worker ran is delivered once after start', async () => {
      const name = queueName();
      const scheduler = started();
      await scheduler.start();
      await scheduler.schedule({ queue: name, key: 'while-down', dueAt: new Date(Date.now() - 1_000), payload: { late: true } });
      await scheduler.stop();
      const delivered: DueJob[] = [];
      const worker = started();
      await worker.work(name, async (job) => void delivered.push(job));
      await worker.start();
      await until(() => delivered.length === 1);
      await sleep(harness.slackMs);
      expect(delivered).toHaveLength(1);
      expect(delivered[0]!.payload).toEqual({ late: true });
    });

    it('retries a failing handler with a higher attempt number', async () => {
      const queue = started();
      const name = queueName();
      const attempts: number[] = [];
      await queue.work(name, async (job) => {
        attempts.push(job.attempt);
        if (attempts.length === 1) throw new Error('transient');
      });
      await queue.start();
      await queue.schedule({ queue: name, key: 'flaky', dueAt: new Date(), payload: {} });
      await until(() => attempts.length === 2, 20_000);
      await sleep(harness.slackMs);
      expect(attempts).toEqual([1, 2]);
    });

    it('I7: two workers on one database deliver each of 60 jobs exactly once', async () => {
      const name = queueName();
      const seen = new Map<string, number>();
      const handler = async (job: DueJob) => {
        seen.set(job.key, (seen.get(job.key) ?? 0) + 1);
        await sleep(2);
      };
      const [a, b] = [started(), started()];
      await a.work(name, handler);
      await b.work(name, handler);
      await Promise.all([a.start(), b.start()]);
      const dueAt = new Date(Date.now() + 200);
      for (let index = 0; index < 60; index++) await (index % 2 ? a : b).schedule({ queue: name, key: `job-${index}`, dueAt, payload: {} });
      await until(() => seen.size === 60, 30_000);
      await sleep(harness.slackMs + 200);
      expect([...seen.values()].every((count) => count === 1)).toBe(true);
    });

    it('stop() waits for handlers in flight', async () => {
      const queue = harness.newQueue();
      const name = queueName();
      let finished = false;
      let began = false;
      await queue.work(name, async () => {
        began = true;
        await sleep(400);
        finished = true;
      });
      await queue.start();
      await queue.schedule({ queue: name, key: 'slow', dueAt: new Date(), payload: {} });
      await until(() => began);
      await queue.stop();
      expect(finished).toBe(true);
    });

    it('schedules within a storage transaction: rolled back, no job; committed, a job', async () => {
      const queue = started();
      const name = queueName();
      const delivered: string[] = [];
      await queue.work(name, async (job) => void delivered.push(job.key));
      await queue.start();
      await expect(
        harness.storage.context.transaction(async (trx) => {
          await queue.schedule({ queue: name, key: 'rolled-back', dueAt: new Date(), payload: {} }, { within: trx as unknown as StorageTransaction });
          throw new Error('roll back');
        }),
      ).rejects.toThrow('roll back');
      await harness.storage.context.transaction(async (trx) => {
        await queue.schedule({ queue: name, key: 'committed', dueAt: new Date(), payload: {} }, { within: trx as unknown as StorageTransaction });
      });
      await until(() => delivered.length >= 1);
      await sleep(harness.slackMs + 200);
      expect(delivered).toEqual(['committed']);
    });
  });
}
