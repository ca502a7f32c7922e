import type { JobHandler, JobQueue, QueueDepth, ScheduleJob, ScheduleOptions } from '../../app/job-queue.js';

/**
 * Two job queues behind one port, chosen by queue name: on PostgreSQL the due timers
 * (follow-ups, check-ins, schedule fires) go to the job table claimed with SKIP LOCKED and
 * woken by NOTIFY — low lag whatever the backlog — and every other queue stays on pg-boss
 * (retries, long-running work, its own upkeep).
 */
export class RoutedJobQueue implements JobQueue {
  constructor(
    private readonly timers: JobQueue,
    private readonly timerQueues: ReadonlySet<string>,
    private readonly rest: JobQueue,
  ) {}

  private of(queue: string): JobQueue {
    return this.timerQueues.has(queue) ? this.timers : this.rest;
  }

  schedule(job: ScheduleJob, options?: ScheduleOptions): Promise<{ id: string; created: boolean }> {
    return this.of(job.queue).schedule(job, options);
  }

  cancel(queue: string, key: string): Promise<boolean> {
    return this.of(queue).cancel(queue, key);
  }

  work(queue: string, handler: JobHandler): Promise<void> {
    return this.of(queue).work(queue, handler);
  }

  async start(): Promise<void> {
    await Promise.all([this.timers.start(), this.rest.start()]);
  }

  async stop(): Promise<void> {
    await Promise.all([this.timers.stop(), this.rest.stop()]);
  }

  async depth(): Promise<QueueDepth> {
    const [timers, rest] = await Promise.all([this.timers.depth(), this.rest.depth()]);
    return { ready: timers.ready + rest.ready, deferred: timers.deferred + rest.deferred, active: timers.active + rest.active };
  }
}
