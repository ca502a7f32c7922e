import type { Logger } from 'pino';
import type { VigilEvent } from '../../domain/events.js';
import type { EventBus, EventHandler, SubscribeOptions } from '../../app/ports.js';

export interface InProcessEventBusOptions {
  /** How long a thread's events stay replayable (default an hour). */
  replayWindowMs?: number;
  /** At most this many replayable events per thread (the oldest go first). */
  replayLimit?: number;
  /** At most this many replayable events in all: past it, the threads quiet the longest lose theirs first. */
  totalLimit?: number;
}

interface Numbered {
  id: number;
  event: VigilEvent;
  at: number;
}

/**
 * Events to the clients of this process. A failing subscriber never breaks a run.
 *
 * Each thread's events are numbered in publishing order. Ids start from the clock (in
 * microseconds) and only grow, so an id a client kept across a restart of this process is
 * still below every new one and resumption never skips a new event; the replay buffer
 * itself is memory, so events before a restart are not replayed.
 *
 * The buffers are kept in the order their threads last published, so any publish also
 * drops the buffers of threads that have been quiet for the whole window (their events
 * can no longer be replayed), and those quiet the longest when the total is exceeded:
 * memory follows the threads active within the window, not every thread ever seen.
 */
export class InProcessEventBus implements EventBus {
  private readonly handlers = new Map<string, Set<EventHandler>>();
  private readonly observers = new Set<EventHandler>();
  private readonly recent = new Map<string, Numbered[]>();
  private readonly lastIds = new Map<string, number>();
  private readonly replayWindowMs: number;
  private readonly replayLimit: number;
  private readonly totalLimit: number;
  /** Events in all the buffers. */
  private total = 0;

  constructor(private readonly logger: Logger, options: InProcessEventBusOptions = {}) {
    this.replayWindowMs = options.replayWindowMs ?? 3_600_000;
    this.replayLimit = options.replayLimit ?? 2_000;
    this.totalLimit = options.totalLimit ?? 200_000;
  }

  publish(event: VigilEvent): void {
    const threadId = event.threadId;
    for (const observer of this.observers) this.deliver(observer, event);
    if (!threadId) return;
    const now = Date.now();
    const id = Math.max((this.lastIds.get(threadId) ?? 0) + 1, now * 1000);
    this.lastIds.set(threadId, id);
    this.remember(threadId, { id, event, at: now });
    for (const handler of this.handlers.get(threadId) ?? []) this.deliver(handler, event, id);
  }

  observe(handler: EventHandler): () => void {
    this.observers.add(handler);
    return () => this.observers.delete(handler);
  }

  subscribe(threadId: string, handler: EventHandler, options: SubscribeOptions = {}): () => void {
    const after = options.afterEventId;
    if (after !== undefined) for (const kept of this.recent.get(threadId) ?? []) if (kept.id > after) this.deliver(handler, kept.event, kept.id);
    let set = this.handlers.get(threadId);
    if (!set) {
      set = new Set();
      this.handlers.set(threadId, set);
    }
    set.add(handler);
    // After subscribe returns, as on a shared bus, so a caller may use what subscribe returned.
    if (options.onReplayed) queueMicrotask(options.onReplayed);
    return () => {
      const current = this.handlers.get(threadId);
      current?.delete(handler);
      if (current?.size === 0) this.handlers.delete(threadId);
    };
  }

  async forgetThread(threadId: string): Promise<void> {
    this.drop(threadId);
  }

  /** Ids start from the clock, so a number forgotten here is never handed out again. */
  private drop(threadId: string): void {
    this.total -= this.recent.get(threadId)?.length ?? 0;
    this.recent.delete(threadId);
    this.lastIds.delete(threadId);
  }

  async flush(): Promise<void> {}

  async close(): Promise<void> {}

  private remember(threadId: string, numbered: Numbered): void {
    const kept = this.recent.get(threadId) ?? [];
    // Moved to the end: the map's order is the order threads last published.
    this.recent.delete(threadId);
    this.recent.set(threadId, kept);
    kept.push(numbered);
    this.total += 1;
    const horizon = numbered.at - this.replayWindowMs;
    let drop = Math.max(0, kept.length - this.replayLimit);
    while (drop < kept.length && kept[drop]!.at < horizon) drop += 1;
    if (drop > 0) {
      kept.splice(0, drop);
      this.total -= drop;
    }
    // Threads at the front published longest ago: gone once quiet for the whole window, or while over the total.
    for (const [quietId, events] of this.recent) {
      if (quietId === threadId) break;
      const newest = events.at(-1);
      if (this.total <= this.totalLimit && newest !== undefined && newest.at >= horizon) break;
      this.drop(quietId);
    }
  }

  private deliver(handler: EventHandler, event: VigilEvent, id?: number): void {
    try {
      handler(event, id);
    } catch (error) {
      this.logger.warn({ err: error, threadId: event.threadId, eventType: event.type }, 'event subscriber failed');
    }
  }
}
