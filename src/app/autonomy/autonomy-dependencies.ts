import type { Logger } from 'pino';
import type { TimerRecord } from '../../domain/autonomy/timer.js';
import type { ConversationService } from '../conversation-service.js';
import type { JobQueue } from '../job-queue.js';
import type { ChatModelResolver, Clock, EventBus, Storage } from '../ports.js';
import type { RunCoordinator } from '../run-coordinator.js';
import type { TimerRepository } from './timer-repository.js';

/** The job queue every follow-up timer's job goes to; the job's key is the timer id. */
export const FOLLOW_UP_QUEUE = 'autonomy-follow-up';

/** What the autonomy use cases share. Built once by the composition root. */
export interface AutonomyDependencies {
  storage: Storage;
  timers: TimerRepository;
  jobs: JobQueue;
  conversations: ConversationService;
  coordinator: RunCoordinator;
  events: EventBus;
  clock: Clock;
  logger: Logger;
  /** The agent's model, for the optional evaluator (rules+model). */
  models: ChatModelResolver;
  defaultModel: string;
  /** Whether the thread waits for a person's decision on a tool call: no follow-up fires then (I16). */
  awaitingApproval?: (threadId: string) => Promise<boolean>;
}

/** timer.schedule / timer.fire / timer.cancel, to every client subscribed to the thread. */
export class TimerEvents {
  constructor(private readonly events: EventBus, private readonly clock: Clock) {}

  scheduled(timer: TimerRecord): void {
    this.events.publish({ type: 'timer.schedule', threadId: timer.threadId, timerId: timer.id, at: this.now(), dueAt: timer.dueAt, triggerType: timer.triggerType, reason: timer.reason });
  }

  fired(timer: TimerRecord, runId: string): void {
    this.events.publish({ type: 'timer.fire', threadId: timer.threadId, timerId: timer.id, at: this.now(), dueAt: timer.dueAt, runId, triggerType: timer.triggerType });
  }

  /** Cancelled, dropped or skipped: it will not fire, and `reason` says why. */
  cancelled(timer: TimerRecord, reason: string): void {
    this.events.publish({ type: 'timer.cancel', threadId: timer.threadId, timerId: timer.id, at: this.now(), reason });
  }

  private now(): string {
    return this.clock.now().toISOString();
  }
}

/** The later of two optional ISO times: the thread's last real user message, from either record. */
export function latestIso(...values: Array<string | null | undefined>): string | null {
  let latest: string | null = null;
  for (const value of values) if (value && (latest === null || Date.parse(value) > Date.parse(latest))) latest = value;
  return latest === null ? null : new Date(latest).toISOString();
}
