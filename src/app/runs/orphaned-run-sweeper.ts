import type { Logger } from 'pino';
import { PeriodicTask } from '../periodic-task.js';
import type { Clock, EventBus, RunEnd, RunRecord, RunRepository, StoredMessage } from '../ports.js';
import type { ThreadLockService } from '../thread-lock.js';

/** The end recorded for a run whose process died before it could record one. */
export const PROCESS_ENDED_REASON = 'its process ended before the run recorded its end';
export const PROCESS_ENDED_CODE = 'INTERNAL';
const PROCESS_ENDED_MESSAGE = 'the process running it ended';

/** How a run whose process died is ended, by the sweep or by a follow-up's own recovery. */
export function processEndedRunEnd(endedAt: string): RunEnd & { status: 'failed'; reason: string; errorCode: string; errorMessage: string } {
  return { status: 'failed', reason: PROCESS_ENDED_REASON, errorCode: PROCESS_ENDED_CODE, errorMessage: PROCESS_ENDED_MESSAGE, endedAt };
}

export interface OrphanedRunSweeperDeps {
  runs: RunRepository;
  locks: ThreadLockService;
  events: EventBus;
  clock: Clock;
  logger: Logger;
  /** The messages the run added to its thread's history (stored with its checkpoints: what the dead run saved). */
  messagesOfRun(run: RunRecord): Promise<StoredMessage[]>;
}

/** Told of each run the sweep ended, after `run.end` (e.g. outbound webhooks' `run.completed`), with the messages the run added. */
export type SweptRunHook = (run: RunRecord, messages: readonly StoredMessage[]) => Promise<void>;

export interface OrphanedRunSweeperOptions {
  /** First pass after start (0: at once — a restarted single process has no runs of its own yet). */
  initialDelayMs?: number;
  intervalMs?: number;
  /** A run younger than this is left alone even with its thread free (it may be starting). */
  minAgeMs?: number;
  batchSize?: number;
}

/**
 * Finds runs still marked `running` whose process is gone, and ends them. A run is recorded
 * only by the holder of its thread's lock (I8), and the lock is held until the run has
 * recorded its end, so a `running` run whose thread lock can be taken — by nobody here nor,
 * on PostgreSQL, on any other instance (advisory locks die with their connection) — has no
 * process behind it. Each one is ended as `failed` with PROCESS_ENDED_REASON, and `run.end`
 * is announced (a reply the dead run saved is in history already: it is stored with its
 * checkpoint). Without this, a person's or webhook's run cut by a
 * kill stays `running` forever. A follow-up's own recovery (its redelivered job) treats a
 * swept run as interrupted and finishes its turn once.
 */
export class OrphanedRunSweeper {
  readonly #deps: OrphanedRunSweeperDeps;
  readonly #options: Required<OrphanedRunSweeperOptions>;
  readonly #task: PeriodicTask<number>;
  readonly #hooks: SweptRunHook[] = [];

  constructor(deps: OrphanedRunSweeperDeps, options: OrphanedRunSweeperOptions = {}) {
    this.#deps = deps;
    this.#options = { initialDelayMs: 0, intervalMs: 30_000, minAgeMs: 0, batchSize: 100, ...options };
    this.#task = new PeriodicTask(() => this.#sweep(), this.#options);
  }

  start(): void {
    this.#task.start();
  }

  /** Register a hook run for each run the sweep ends (as RunCoordinator.onRunEnd for the runs it ends). */
  onEnded(hook: SweptRunHook): void {
    this.#hooks.push(hook);
  }

  stop(): Promise<void> {
    return this.#task.stop();
  }

  /** One pass now (or the one in flight): how many orphaned runs were ended. */
  sweepOnce(): Promise<number> {
    return this.#task.runOnce();
  }

  async #sweep(): Promise<number> {
    const { runs, clock, logger } = this.#deps;
    let ended = 0;
    try {
      const startedBefore = new Date(clock.now().getTime() - this.#options.minAgeMs).toISOString();
      const candidates = await runs.listRunning({ startedBefore, limit: this.#options.batchSize });
      for (const run of candidates) {
        if (this.#task.stopped) break;
        if (await this.endIfOrphaned(run)) ended += 1;
      }
      if (ended > 0) logger.warn({ ended, looked: candidates.length }, 'ended runs whose process had died');
    } catch (error) {
      logger.error({ err: error, ended }, 'the orphaned-run sweep failed; the next one tries again');
    }
    return ended;
  }

  /**
   * End this run if it is orphaned (still `running`, its thread lock free): true when this
   * call ended it. Also for a record that owns a run and finds it still running on recovery
   * (a schedule fire delivered again), so that it need not wait for the next pass.
   */
  async endIfOrphaned(candidate: RunRecord): Promise<boolean> {
    const { runs, locks, events, clock, logger } = this.#deps;
    const lease = await locks.tryAcquire(candidate.threadId);
    if (!lease) return false; // a live run holds (or waits for) the thread: not ours to judge
    try {
      const run = await runs.get(candidate.userId, candidate.id);
      if (run?.status !== 'running') return false;
      const log = logger.child({ runId: run.id, threadId: run.threadId, trigger: run.trigger });
      let added: StoredMessage[] = [];
      try {
        added = await this.#deps.messagesOfRun(run);
      } catch (error) {
        log.error({ err: error }, 'could not read the messages of an orphaned run; ending it anyway');
      }
      const at = clock.now().toISOString();
      const end = processEndedRunEnd(at);
      const finished = await runs.finish(run.id, end);
      if (finished.status !== 'failed' || finished.reason !== PROCESS_ENDED_REASON) return false;
      log.warn({ startedAt: run.startedAt }, 'a run was left running by a process that died: ended as failed');
      events.publish({ type: 'run.end', threadId: run.threadId, runId: run.id, at, status: 'failed', reason: PROCESS_ENDED_REASON, error: { code: end.errorCode, message: end.errorMessage } });
      for (const hook of this.#hooks) {
        await hook(finished, added).catch((error: unknown) => log.error({ err: error }, 'a hook on a swept run failed'));
      }
      return true;
    } finally {
      await lease.release();
    }
  }
}

/** A run ended by the sweep (its process died), as opposed to one that failed on its own. */
export function endedByDeadProcess(run: { status: string; reason: string | null }): boolean {
  return run.status === 'failed' && run.reason === PROCESS_ENDED_REASON;
}
