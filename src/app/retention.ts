import type { Logger } from 'pino';
import { PeriodicTask } from './periodic-task.js';
import type { Clock, Iso } from './ports.js';

/**
 * What may be pruned: only records nothing waits on or counts — finished runs, settled timers
 * (not the follow-ups fired in a silence that has not ended: the per-silence cap counts them), old
 * inbound deliveries and handled Telegram update ids, decided or expired approvals (never a pending one, nor any call of a
 * step that still has one), fired, cancelled or skipped check-ins, and outbound webhook
 * deliveries that were delivered or gave up, with their attempts (never one still retrying).
 */
export interface RetentionStore {
  /** Delete at most `limit` rows of `kind` older than `before`; returns how many went. */
  pruneBatch(kind: RetentionKind, before: Iso, limit: number): Promise<number>;
}

export type RetentionKind = 'hook_deliveries' | 'telegram_updates' | 'runs' | 'protocol_runs' | 'timers' | 'approvals' | 'check_ins' | 'outbound_attempts' | 'outbound_deliveries' | 'schedule_fires';
/** In this order: a delivery's attempts go before the delivery. */
/** In this order: a protocol run row goes once its run's record went. */
export const RETENTION_KINDS: readonly RetentionKind[] = ['hook_deliveries', 'telegram_updates', 'runs', 'protocol_runs', 'timers', 'approvals', 'check_ins', 'outbound_attempts', 'outbound_deliveries', 'schedule_fires'];

/**
 * Records kept at least this long whatever VIGIL_RETENTION_DAYS says: Telegram redelivers
 * an unconfirmed update for 24 hours, and a handled update id is what keeps a redelivered
 * one from running twice (the channel keeps them twice that).
 */
const MIN_AGE_MS: Partial<Record<RetentionKind, number>> = { telegram_updates: 48 * 3600_000 };

export interface RetentionOptions {
  store: RetentionStore;
  clock: Clock;
  logger: Logger;
  retentionDays: number;
  /** First pass after start, then every `intervalMs`. */
  initialDelayMs?: number;
  intervalMs?: number;
  /** Rows per delete: small, so no statement holds the database (or SQLite's event loop) for long. */
  batchSize?: number;
}

/**
 * The retention job: webhook deliveries, handled Telegram update ids, run records, settled timers, decided approvals,
 * settled check-ins and finished outbound deliveries older than VIGIL_RETENTION_DAYS are deleted in small batches, yielding between them, so requests are
 * never held up. One pass at a time; its own errors are logged, never thrown; stop waits
 * for a pass in flight. Every instance may run it: deletes are idempotent.
 */
export class RetentionJob {
  readonly #options: Required<Omit<RetentionOptions, 'store' | 'clock' | 'logger'>> & Pick<RetentionOptions, 'store' | 'clock' | 'logger'>;
  readonly #task: PeriodicTask<Record<RetentionKind, number>>;

  constructor(options: RetentionOptions) {
    this.#options = { initialDelayMs: 60_000, intervalMs: 6 * 3600_000, batchSize: 500, ...options };
    this.#task = new PeriodicTask(() => this.#prune(), this.#options);
  }

  /** Idempotent. */
  start(): void {
    this.#task.start();
  }

  stop(): Promise<void> {
    return this.#task.stop();
  }

  /** One pass now (or the one in flight): how many rows of each kind were deleted. */
  runOnce(): Promise<Record<RetentionKind, number>> {
    return this.#task.runOnce();
  }

  async #prune(): Promise<Record<RetentionKind, number>> {
    const { store, clock, logger, retentionDays, batchSize } = this.#options;
    const now = clock.now().getTime();
    const before = new Date(now - retentionDays * 24 * 3600_000).toISOString();
    const deleted = Object.fromEntries(RETENTION_KINDS.map((kind) => [kind, 0])) as Record<RetentionKind, number>;
    try {
      for (const kind of RETENTION_KINDS) {
        const floor = MIN_AGE_MS[kind];
        const cutoff = floor === undefined ? before : new Date(Math.min(Date.parse(before), now - floor)).toISOString();
        for (;;) {
          if (this.#task.stopped) break;
          const count = await store.pruneBatch(kind, cutoff, batchSize);
          deleted[kind] += count;
          if (count < batchSize) break;
          await new Promise((resolve) => setImmediate(resolve)); // let requests in between batches
        }
      }
      logger.info({ before, deleted, retentionDays }, 'retention pass done');
    } catch (error) {
      logger.error({ err: error, before, deleted }, 'retention pass failed; the next one tries again');
    }
    return deleted;
  }
}
