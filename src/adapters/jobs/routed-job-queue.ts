import type { JobHandler, JobQueue, QueueDepth, ScheduleJob, ScheduleOptions } from '../../app/job-queue.js';

/**
 * Two job queues behind one port, chosen by queue name. The due timers (follow-ups,
 * check-ins, schedule fires) get a scheduler of their own that runs many at once and
 * claims them in batches — low lag whatever the backlog: on PostgreSQL the job table
 * claimed with SKIP LOCKED and woken by NOTIFY, on SQLite a second embedded scheduler over
 * the same table. Every other queue stays on pg-boss (retries, long-running work, its own
 * upkeep) or on the embedded scheduler with its few at once.
 */
export class RoutedJobQueue implements JobQueue {
  #prepared: Promise<unknown> | undefined;

  constructor(
    private readonly timers: JobQueue,
    private readonly timerQueues: ReadonlySet<string>,
    private readonly rest: JobQueue,
    /** Runs once before either queue starts: e.g. moving the timers an earlier routing left on `rest`. */
    private readonly beforeStart?: () => Promise<unknown>,
  ) {}

  private of(queue: string): JobQueue {
    return this.timerQueues.has(queue) ? this.timers : this.rest;
  }

  schedule(job: ScheduleJob, options?: ScheduleOptions): Promise<{ id: string; created: boolean }> {
    return this.of(job.queue).schedule(job, options);
  }

  cancel(queue: string, key: string, options?: ScheduleOptions): Promise<boolean> {
    return this.of(queue).cancel(queue, key, options);
  }

  work(queue: string, handler: JobHandler): Promise<void> {
    return this.of(queue).work(queue, handler);
  }

  async start(): Promise<void> {
    await (this.#prepared ??= this.beforeStart?.() ?? Promise.resolve());
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
