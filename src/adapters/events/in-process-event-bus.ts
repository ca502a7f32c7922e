import type { Logger } from 'pino';
import type { VigilEvent } from '../../domain/events.js';
import type { EventBus, EventHandler } from '../../app/ports.js';

/** Events to the clients of this process. A failing subscriber never breaks a run. */
export class InProcessEventBus implements EventBus {
  private readonly handlers = new Map<string, Set<EventHandler>>();
  private readonly observers = new Set<EventHandler>();

  constructor(private readonly logger: Logger) {}

  publish(event: VigilEvent): void {
    const threadId = event.threadId;
    for (const observer of this.observers) this.deliver(observer, event);
    if (!threadId) return;
    for (const handler of this.handlers.get(threadId) ?? []) this.deliver(handler, event);
  }

  observe(handler: EventHandler): () => void {
    this.observers.add(handler);
    return () => this.observers.delete(handler);
  }

  private deliver(handler: EventHandler, event: VigilEvent): void {
    try {
      handler(event);
    } catch (error) {
      this.logger.warn({ err: error, threadId: event.threadId, eventType: event.type }, 'event subscriber failed');
    }
  }

  subscribe(threadId: string, handler: EventHandler): () => void {
    let set = this.handlers.get(threadId);
    if (!set) {
      set = new Set();
      this.handlers.set(threadId, set);
    }
    set.add(handler);
    return () => {
      const current = this.handlers.get(threadId);
      current?.delete(handler);
      if (current?.size === 0) this.handlers.delete(threadId);
    };
  }
}
