import { randomUUID } from 'node:crypto';
import type { DueJob, JobHandler, JobQueue, ScheduleJob } from '../../src/app/job-queue.js';

/**
 * An in-memory JobQueue for overlord tests: a test double of a queue (not of a database)
 * that honours the port's contract — at most one pending job per (queue, key), `cancel`
 * removes the pending one, a job handed to its handler is no longer pending (so the
 * handler can schedule the key's next job), and a due job is delivered when the test
 * says the time has come (`deliverDue`), so tests control time.
 */
export class InMemoryJobQueue implements JobQueue {
  private readonly pending = new Map<string, DueJob>(); // `${queue}\u0000${key}` → job
  private readonly handlers = new Map<string, JobHandler>();
  readonly delivered: DueJob[] = [];
  private started = false;

  async schedule(job: ScheduleJob): Promise<{ id: string; created: boolean }> {
    const slot = `${job.queue}\u0000${job.key}`;
    const existing = this.pending.get(slot);
    if (existing) return { id: existing.id, created: false };
    const due: DueJob = { id: randomUUID(), queue: job.queue, key: job.key, dueAt: job.dueAt.toISOString(), payload: structuredClone(job.payload), attempt: 0 };
    this.pending.set(slot, due);
    return { id: due.id, created: true };
  }

  async cancel(queue: string, key: string): Promise<boolean> {
    return this.pending.delete(`${queue}\u0000${key}`);
  }

  async work(queue: string, handler: JobHandler): Promise<void> {
    this.handlers.set(queue, handler);
  }

  async start(): Promise<void> {
    this.started = true;
  }

  async stop(): Promise<void> {
    this.started = false;
  }

  async depth(): Promise<{ ready: number; deferred: number; active: number }> {
    return { ready: 0, deferred: this.pending.size, active: 0 };
  }

  /** The pending job of (queue, key), if any. */
  pendingJob(queue: string, key: string): DueJob | undefined {
    return this.pending.get(`${queue}\u0000${key}`);
  }

  /** Deliver every job due at `now` (only the key's, when given), one at a time, in due order. */
  async deliverDue(now: Date, only?: { key: string }): Promise<DueJob[]> {
    if (!this.started) return [];
    const due = [...this.pending.entries()]
      .filter(([, job]) => Date.parse(job.dueAt) <= now.getTime() && (only === undefined || job.key === only.key))
      .sort(([, a], [, b]) => a.dueAt.localeCompare(b.dueAt));
    const delivered: DueJob[] = [];
    for (const [slot, job] of due) {
      const handler = this.handlers.get(job.queue);
      if (!handler) continue;
      this.pending.delete(slot); // handed out: no longer pending
      const delivery = { ...job, attempt: job.attempt + 1 };
      this.delivered.push(delivery);
      delivered.push(delivery);
      await handler(delivery);
    }
    return delivered;
  }
}
