import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { AgentRecord, EventBus, StoredMessage, ThreadRecord } from '../../app/ports.js';
import type { ConversationService } from '../../app/conversation-service.js';
import { newRunRecord, type ProtocolRunRecord, type ProtocolStore } from '../../app/langgraph/protocol-store.js';
import { STOPPING_REASON, type RunOutcome } from '../../app/run-coordinator.js';
import type { InstancePresence } from '../../app/instance-presence.js';
import type { MessageContent } from '../../domain/message-content.js';
import { VigilError, isVigilError } from '../../domain/errors.js';
import type { VigilEvent } from '../../domain/events.js';
import { toVigilError } from '../errors.js';
import { toMessageDict } from './convert.js';
import { RunFrames } from './run-stream.js';
import { setTimeout as delay } from 'node:timers/promises';

/** How long a finished run's stream waits for its run.end to come through the event bus. */
const RUN_END_GRACE_MS = 10_000;
/** The end of a run's stream when it was called off before it started. */
const CANCELLED_BEFORE_START = { error: 'RUN_CANCELLED', message: 'the run was cancelled before it started' };
/** How a resume ends when nothing will continue the thread with its decisions. */
const RESUME_ABANDONED = { code: 'RESUME_NOT_STARTED', message: 'the decisions were recorded, but the server stopped before their run started and the thread went on without it: no run will carry them out' };
const RESUME_OVERTAKEN = { code: 'RESUME_NOT_STARTED', message: 'the decisions were recorded, but the thread went on without them: no run will carry them out' };
const RESUME_UNDECIDED = { code: 'RESUME_NOT_STARTED', message: 'the server stopped before the decisions were recorded: nothing was decided and no run continued the thread; resume again' };
/**
 * How a person's message run ends when the server that had it stopped while it waited for
 * its thread (behind another run): the message lived in that process's memory only (it is
 * written to the thread when its run starts), so nothing can run it now.
 */
export const RUN_NOT_STARTED = { code: 'RUN_NOT_STARTED', message: "the server that had this run stopped before the run started (it was waiting for its thread): its message was never added to the thread; send it again" };

/**
 * How often a follower of another instance's run asks whether that run has ended (one
 * primary-key read): the only sign of a queued run called off before it started, which
 * sends no event.
 */
const FOLLOW_CHECK_MS = 1_000;

/** Why a protocol run was cancelled, as its record says. */
export const CANCEL_REASONS = {
  requested: 'the run was cancelled',
  disconnected: 'the client went away',
  interrupted: 'interrupted by a newer run on the thread (multitask_strategy interrupt)',
} as const;

type Json = Record<string, unknown>;

export interface RunManagerDependencies {
  conversations: ConversationService;
  events: EventBus;
  store: ProtocolStore;
  logger: Logger;
  /** Visible messages of a thread (I2), for `values` frames. */
  visibleMessages: (userId: string, threadId: string) => Promise<StoredMessage[]>;
  /** The thread's interrupts (tool calls waiting for a person). */
  interrupts: (userId: string, threadId: string) => Promise<Json[]>;
  /** How long a finished run's frames stay for joins and reconnects. */
  retentionMs: number;
  /** How long a resume waits for the approvals to start the run it follows. */
  resumeStartMs?: number;
  /** Is a vigil run (of any trigger) in progress on the thread? */
  activeRunOf: (threadId: string) => string | undefined;
  /** Which server processes still run: the owner of a queued run that is gone never starts it. */
  presence: InstancePresence;
  /**
   * Whether a run (of any instance) holds the thread's lock now. A run `claimed` holds it
   * until its run is recorded, so its owner is running it whatever its presence says.
   */
  threadHeld: (threadId: string) => Promise<boolean>;
  /** What became of a decided step (ApprovalService.continuationOf); absent without approvals. */
  continuationOf?: (userId: string, threadId: string, messageId: string, since: string) => Promise<{ state: 'continued'; runId: string } | { state: 'waiting' | 'undecided' | 'gone' }>;
}

/** What a cancel did: stopped the run (or it had ended), or refused because the run carries out recorded decisions. */
export type CancelResult = 'cancelled' | 'not_cancellable';

export interface InFlight {
  runId: string;
  userId: string;
  threadId: string;
  frames: RunFrames;
  controller: AbortController;
  /** Resolves when the run (and what follows it under the thread's lock) is over; the outcome when it ran here. */
  settled: Promise<RunOutcome | undefined>;
  /** A resume's: whether its decisions were recorded (once known), and the vigil run continuing the thread, once it started. */
  resume?: { decided: Promise<boolean>; continuing: () => string | undefined };
}

/** VigilEvent types passed to `custom` as vigil's extension (plan progress, approvals, timers, retractions). */
const CUSTOM_EVENTS: ReadonlySet<string> = new Set([
  'run.start',
  'message.retracted',
  'timer.schedule',
  'timer.fire',
  'timer.cancel',
  'plan.create',
  'step.start',
  'step.end',
  'critic.decide',
  'plan.complete',
  'approval.requested',
  'approval.decided',
  'approval.expired',
  'approval.expiring',
  'run.end',
]);

interface RunShape {
  runId: string;
  userId: string;
  thread: ThreadRecord;
  agent: AgentRecord;
  metadata: Json;
  multitaskStrategy: string;
}

/**
 * Protocol runs: each is a person's message sent through the conversation service, so it
 * runs on the run coordinator like any other (one run per thread, I8; pre-emption of
 * autonomy; autonomy planned after it). This keeps the frames each run streamed, so
 * streams, joins and reconnects read one record.
 */
export class ProtocolRunManager {
  private readonly inFlight = new Map<string, InFlight>(); // runId →
  private readonly finished = new Map<string, RunFrames>(); // runId → frames, for a while
  private readonly followed = new Map<string, RunFrames>(); // runId → frames of a run another instance runs
  /** Aborted when the server stops: resumes waiting for their run stop waiting and write nothing. */
  private readonly stopping = new AbortController();

  constructor(private readonly deps: RunManagerDependencies) {}

  /** The server is stopping: stop waiting, write nothing (after the restart, reconcile ends such a run as what happened). */
  close(): void {
    this.stopping.abort();
  }

  /**
   * A resume's record whose decisions' run this process is not waiting for (its process
   * stopped, or another instance has it): brought in step with what happened. Linked to the
   * run that continued the thread once there is one (as its owner links it at run.start);
   * ended as failed, with the reason, when nothing will ever continue it (the decisions were
   * never recorded, or the thread moved on without them). While the step is decided and
   * still waits, the durable resume job starts that run (after a restart too): it stays
   * pending. Without this, a resume whose process stopped between the decisions and the
   * start of their run stayed `pending` for ever, and join waited for ever.
   */
  async reconcile(row: ProtocolRunRecord): Promise<ProtocolRunRecord> {
    if (row.resumeStep === null) return this.reconcileMessage(row);
    if (row.state !== 'pending' || row.vigilRunId !== null || this.inFlight.has(row.runId) || !this.deps.continuationOf) return row;
    const found = await this.deps.continuationOf(row.userId, row.threadId, row.resumeStep, row.createdAt);
    if (found.state === 'continued') {
      await this.deps.store.setRunState(row.runId, 'started', found.runId);
      return { ...row, state: 'started', vigilRunId: found.runId };
    }
    // Still deciding on a live instance, for a moment: only a record older than a resume's wait for its run is judged.
    const stale = Date.now() - Date.parse(row.createdAt) > (this.deps.resumeStartMs ?? 60_000);
    if (found.state === 'gone' || (found.state === 'undecided' && stale)) {
      const error = found.state === 'gone' ? RESUME_ABANDONED : RESUME_UNDECIDED;
      await this.deps.store.setRunState(row.runId, 'failed', undefined, error);
      return { ...row, state: 'failed', error };
    }
    return row;
  }

  /**
   * A person's message run not yet started whose owner is gone (its process crashed or was
   * restarted while the run waited for its thread): ended as failed, RUN_NOT_STARTED. Its
   * message was only in that process's memory, so it can never start; without this it stayed
   * `pending` for ever and join waited for ever. The end is one conditional write, and the
   * owner, should it still be alive after all, claims the row the same way before its run
   * starts (start's `claim`), so the row and what happened always agree. A row `claimed` by
   * an owner that died as its run began is `started` if vigil's run record was written.
   */
  private async reconcileMessage(row: ProtocolRunRecord): Promise<ProtocolRunRecord> {
    if ((row.state !== 'pending' && row.state !== 'claimed') || this.inFlight.has(row.runId)) return row;
    if (await this.deps.presence.isAlive(row.owner)) return row;
    if (row.state === 'claimed' && (await this.isRecorded(row.userId, row.runId))) {
      await this.deps.store.moveRun(row.runId, 'claimed', 'started');
      return { ...row, state: 'started' };
    }
    // Claimed, its owner holds the thread until the run is recorded: an owner whose presence
    // connection is only away is about to run it (its claim is not asked again), and ended
    // here it would be said never to start ("send it again") and then run, message and all.
    // Only a free thread means the claim's process is gone.
    if (row.state === 'claimed' && (await this.deps.threadHeld(row.threadId))) return row;
    if (await this.deps.store.moveRun(row.runId, row.state, 'failed', RUN_NOT_STARTED)) return { ...row, state: 'failed', error: RUN_NOT_STARTED };
    return (await this.deps.store.getRun(row.userId, row.runId)) ?? row;
  }

  /** The id this process writes as the owner of the runs it starts. */
  get owner(): string {
    return this.deps.presence.id;
  }

  busyThreads(): Set<string> {
    return new Set([...this.inFlight.values()].map((run) => run.threadId));
  }

  /** Runs of this process in flight on the thread, oldest first. */
  inFlightOn(threadId: string): InFlight[] {
    return [...this.inFlight.values()].filter((run) => run.threadId === threadId);
  }

  activeRunOf(threadId: string): string | undefined {
    return this.deps.activeRunOf(threadId);
  }

  isBusy(threadId: string): boolean {
    return this.inFlightOn(threadId).length > 0 || this.deps.activeRunOf(threadId) !== undefined;
  }

  framesOf(runId: string): RunFrames | undefined {
    return this.inFlight.get(runId)?.frames ?? this.finished.get(runId) ?? this.followed.get(runId);
  }

  /**
   * The frames of a run in progress that another instance runs (PostgreSQL): rebuilt here
   * from the thread's events, which the event bus replays from the start of its window and
   * then delivers live, through the same translation the running instance uses, until the
   * run's run.end. Frames are numbered by their place in that sequence, as there, so a
   * client may resume here with the Last-Event-ID it got there. One follower per run,
   * shared by every join; it stops by itself when the run is found ended without a run.end
   * coming through (checked every FOLLOW_CHECK_MS).
   */
  follow(shape: Omit<RunShape, 'metadata' | 'multitaskStrategy'>, vigilRunId: string): RunFrames {
    return this.framesOf(shape.runId) ?? this.startFollowing(shape, vigilRunId).frames;
  }

  /**
   * The frames of a run that has ended and whose frames this process does not hold (it ran
   * on another instance, or ended before this process kept them), rebuilt from the thread's
   * events while they are still in the event bus's replay window, numbered as the running
   * instance numbered them: for a client resuming its stream with a Last-Event-ID, which
   * otherwise would miss the end of the reply. Undefined when none of its events are left.
   */
  async replayEnded(shape: Omit<RunShape, 'metadata' | 'multitaskStrategy'>, vigilRunId: string): Promise<RunFrames | undefined> {
    const known = this.framesOf(shape.runId);
    if (known !== undefined) return known;
    const following = this.startFollowing(shape, vigilRunId);
    if (await following.replayed) return following.frames;
    following.stop({ forget: true });
    return undefined;
  }

  /** One follower of a run: its frames, whether the replay found any of its events, and how to stop it. */
  private startFollowing(
    shape: Omit<RunShape, 'metadata' | 'multitaskStrategy'>,
    vigilRunId: string,
  ): { frames: RunFrames; replayed: Promise<boolean>; stop: (options?: { forget?: boolean }) => void } {
    const { frames, handle, finish } = this.tracker({ ...shape, metadata: {}, multitaskStrategy: 'reject' }, { follower: true });
    this.followed.set(shape.runId, frames);
    // A resume's record not yet linked to the run continuing the thread: followed under its own id until it is.
    let target = vigilRunId;
    let started = false;
    let seen = false;
    let ended = false;
    let unsubscribe: (() => void) | undefined;
    let check: NodeJS.Timeout | undefined;
    const stop = (options: { forget?: boolean } = {}) => {
      if (ended) return;
      ended = true;
      clearInterval(check);
      queueMicrotask(() => unsubscribe?.());
      if (options.forget === true) {
        this.followed.delete(shape.runId);
        frames.close();
        return;
      }
      void finish().then(() => setTimeout(() => this.followed.delete(shape.runId), this.deps.retentionMs).unref());
    };
    check = setInterval(() => {
      void this.deps.conversations.getRun(shape.userId, target).then(
        async (run) => {
          if (run.status === 'running') return;
          await delay(RUN_END_GRACE_MS, undefined, { ref: false }); // its run.end may still be on its way
          // Called off by its id while it waited for its thread: recorded cancelled, it never
          // started, so no run.start or run.end of it comes through. Said as for one unrecorded.
          if (!ended && !started && run.status === 'cancelled') frames.push('error', CANCELLED_BEFORE_START);
          stop();
        },
        // Not recorded: still waiting for its thread, or called off before it started.
        async () => {
          const stored = await this.deps.store.getRun(shape.userId, shape.runId).catch(() => undefined);
          const row = stored && (await this.reconcile(stored).catch(() => stored));
          if (ended) return;
          if (row?.vigilRunId != null && row.vigilRunId !== target) {
            // A resume whose continuing run is now known: its events, from the start of the bus's window.
            target = row.vigilRunId;
            listen(target);
            return;
          }
          if (row?.state !== 'cancelled' && row?.state !== 'failed') return;
          // As the instance that had it ends its own stream.
          if (row.state === 'cancelled') frames.push('error', CANCELLED_BEFORE_START);
          else frames.push('error', row.error ? { error: row.error.code, message: row.error.message } : { error: 'INTERNAL', message: 'the run failed before it started' });
          stop();
        },
      );
    }, FOLLOW_CHECK_MS).unref();
    let replayedNow: (seen: boolean) => void = () => undefined;
    const replayed = new Promise<boolean>((resolve) => (replayedNow = resolve));
    const listen = (id: string) => {
      const previous = unsubscribe;
      unsubscribe = this.deps.events.subscribe(
        shape.thread.id,
        (event) => {
          if (ended || id !== target) return;
          const ours = 'runId' in event && event.runId === id;
          if (ours) seen = true;
          if (ours && event.type === 'run.start') started = true;
          if (ours || (started && event.type.startsWith('timer.'))) handle(event);
          if (ours && event.type === 'run.end') stop();
        },
        { afterEventId: 0, onReplayed: () => replayedNow(seen) },
      );
      previous?.();
    };
    listen(target);
    return { frames, replayed, stop };
  }

  /** Wait for a run of this process to settle (false when it is not in flight here). */
  async settle(runId: string): Promise<boolean> {
    const run = this.inFlight.get(runId);
    if (!run) return false;
    await run.settled;
    return true;
  }

  /**
   * Cancel a run: abort it while it waits for the thread, or ask the coordinator to stop it.
   * `reason` is what the run's record says (a client's cancel, its stream dropped, a newer run).
   */
  async cancel(userId: string, runId: string, reason: string = CANCEL_REASONS.requested): Promise<CancelResult> {
    const run = this.inFlight.get(runId);
    if (run?.resume && run.userId === userId) return this.cancelResume(userId, run.resume, reason);
    if (run && run.userId === userId) run.controller.abort(new VigilError('RUN_CANCELLED', reason));
    const stored = await this.deps.store.getRun(userId, runId);
    const row = stored && (await this.reconcile(stored));
    if (row?.resumeStep != null && row.state === 'pending' && row.vigilRunId === null) {
      // A resume another instance waits for (or whose process stopped): its decisions, once
      // recorded, are final. reconcile has just asked what became of them; a run continuing
      // the thread would have linked the row (then cancelled below, as any run).
      return 'not_cancellable';
    }
    // Queued on another instance, waiting for its thread there: it never starts. (A message
    // run has the protocol run's id; a resume pending elsewhere waits for a decision's run,
    // not for the thread, and is not reached so.)
    if (row?.state === 'pending' && row.vigilRunId === null && run === undefined) await this.deps.conversations.cancelAnywhere(userId, runId);
    return this.cancelVigilRun(userId, row?.vigilRunId ?? runId, reason);
  }

  private async cancelVigilRun(userId: string, vigilRunId: string, reason: string): Promise<CancelResult> {
    try {
      await this.deps.conversations.cancelRun(userId, vigilRunId, reason);
    } catch (error) {
      // Not started yet: the abort above stops it before it starts.
      if (!(isVigilError(error) && error.code === 'RUN_NOT_FOUND')) throw error;
    }
    return 'cancelled';
  }

  /**
   * A resume of this process. Its decisions are recorded as it starts (before the client
   * has its id), with the job that starts their run, and a decision is final (I16: the first
   * one wins, and it was announced): a cancel cannot take them back. Before that run starts
   * the cancel is refused, truthfully (`not_cancellable`), rather than answered `interrupted`
   * while the approved calls run anyway; once it runs, that run is cancelled as any run is.
   * (LangGraph Platform drops a pending run with its command; in vigil the decisions are not
   * the run's input but records of their own.)
   */
  private async cancelResume(userId: string, resume: NonNullable<InFlight['resume']>, reason: string): Promise<CancelResult> {
    if (!(await resume.decided)) return 'cancelled'; // nothing recorded: the run ended failed
    const continuing = resume.continuing();
    return continuing === undefined ? 'not_cancellable' : this.cancelVigilRun(userId, continuing, reason);
  }

  /**
   * Record the protocol run and start it in the background: a person's message on the
   * thread, waiting for the thread when another run holds it.
   */
  /**
   * `recorded`: the run's row, already written (with the thread the run made, in one
   * transaction: see newRunRecord); otherwise it is written here first.
   */
  async start(input: Omit<RunShape, 'runId'> & { content: MessageContent; correlationId: string; recorded?: ProtocolRunRecord | undefined }): Promise<InFlight> {
    const { recorded, ...rest } = input;
    const shape = { ...rest, runId: recorded?.runId ?? randomUUID() };
    if (recorded === undefined) await this.record(shape);
    const { frames, handle, finish } = this.tracker(shape);
    let started = false;
    let ended!: () => void;
    const runEnded = new Promise<void>((resolve) => (ended = resolve));
    const unsubscribe = this.deps.events.subscribe(shape.thread.id, (event) => {
      const ours = 'runId' in event && event.runId === shape.runId;
      if (ours && event.type === 'run.start') started = true;
      if (ours && event.type === 'run.end') ended();
      // Timer events carry no run id: those between this run's start and its end are its follow-up plans.
      if (ours || (started && event.type.startsWith('timer.'))) handle(event);
    });
    const controller = new AbortController();
    // Whether this process won the row when the run got its thread (see reconcileMessage).
    let claim: 'unasked' | 'claimed' | 'refused' = 'unasked';
    const claimRow = async () => {
      const won = await this.deps.store.moveRun(shape.runId, 'pending', 'claimed');
      claim = won ? 'claimed' : 'refused';
      return won;
    };
    const settled = this.deps.conversations
      .sendMessage(shape.userId, shape.thread.id, input.content, { runId: shape.runId, correlationId: input.correlationId, signal: controller.signal, claim: claimRow })
      .then(
        (outcome) => outcome,
        async (error: unknown) => {
          if (claim === 'refused') {
            // Ended meanwhile by a process that took this one for gone: that end stands (the run never started).
            const row = await this.deps.store.getRun(shape.userId, shape.runId).catch(() => undefined);
            const ended = row?.error ?? RUN_NOT_STARTED;
            frames.push('error', { error: ended.code, message: ended.message });
            return undefined;
          }
          const vigilError = toVigilError(error);
          const stopped = vigilError.code === 'RUN_CANCELLED' && (vigilError.message === STOPPING_REASON || this.stopping.signal.aborted);
          if (!started) {
            // A server stopping while the run waited: it never starts, as after a crash (its message is not kept).
            const [state, ended] = stopped ? (['failed', RUN_NOT_STARTED] as const) : vigilError.code === 'RUN_CANCELLED' ? (['cancelled', undefined] as const) : (['failed', { code: vigilError.code, message: vigilError.message }] as const);
            // Claimed, the row is this process's to end; still pending, only if nobody ended it first.
            if (claim === 'claimed') await this.deps.store.setRunState(shape.runId, state, undefined, ended);
            else await this.deps.store.moveRun(shape.runId, 'pending', state, ended);
          }
          frames.push('error', stopped && !started ? { error: RUN_NOT_STARTED.code, message: RUN_NOT_STARTED.message } : { error: vigilError.code, message: vigilError.message });
          return undefined;
        },
      )
      .finally(async () => {
        // Across instances (PostgreSQL) the run's last events arrive through the event bus a
        // moment after the run returns: keep listening until its run.end, if it was recorded.
        if (await this.wasRecorded(shape)) await Promise.race([runEnded, delay(RUN_END_GRACE_MS, undefined, { ref: false })]);
        unsubscribe();
        await finish();
      });
    return this.track(shape, frames, controller, settled);
  }

  private async wasRecorded(shape: RunShape): Promise<boolean> {
    return this.isRecorded(shape.userId, shape.runId).catch(() => false);
  }

  /** Resolves once vigil's run is no longer running (checked every FOLLOW_CHECK_MS). */
  private async untilEnded(userId: string, runId: string): Promise<void> {
    for (;;) {
      const run = await this.deps.conversations.getRun(userId, runId).catch(() => undefined);
      if (run?.status !== 'running') return;
      await delay(FOLLOW_CHECK_MS, undefined, { ref: false });
    }
  }

  /** Whether vigil's run record of this id exists (the run started, or was called off by its id). */
  private async isRecorded(userId: string, runId: string): Promise<boolean> {
    try {
      await this.deps.conversations.getRun(userId, runId);
      return true;
    } catch (error) {
      if (isVigilError(error) && error.code === 'RUN_NOT_FOUND') return false;
      throw error;
    }
  }

  /**
   * A resume (`command.resume.decisions`): `decide` records the person's decisions on the
   * waiting tool calls, and the approvals start the run that continues the thread (I16);
   * this protocol run follows that run's events to its end.
   */
  async resume(input: Omit<RunShape, 'runId'> & { step: string; decide: () => Promise<void> }): Promise<InFlight> {
    const { step, decide, ...rest } = input;
    const shape = { ...rest, runId: randomUUID() };
    const row = newRunRecord({ ...shape, threadId: shape.thread.id, agentId: shape.agent.id, resumeStep: step, owner: this.owner });
    const { createdAt } = row;
    await this.deps.store.createRun(row);
    const { frames, handle, finish } = this.tracker(shape);
    let followed: string | undefined;
    let armed = false;
    let ended!: () => void;
    const done = new Promise<void>((resolve) => {
      ended = resolve;
    });
    const unsubscribe = this.deps.events.subscribe(shape.thread.id, (event) => {
      if (!armed || !('runId' in event) || event.runId === undefined) return;
      if (followed === undefined && event.type === 'run.start') {
        followed = event.runId;
        void this.deps.store.setRunState(shape.runId, 'started', followed);
      }
      if (event.runId !== followed) return;
      handle(event);
      if (event.type === 'run.end') ended();
    });
    const controller = new AbortController();
    let recorded!: (decided: boolean) => void;
    const decided = new Promise<boolean>((resolve) => (recorded = resolve));
    let onStop: () => void = () => undefined;
    const stopping = new Promise<'stopping'>((resolve) => (onStop = () => resolve('stopping')));
    const settled = (async () => {
      try {
        this.stopping.signal.addEventListener('abort', onStop, { once: true });
        if (this.stopping.signal.aborted) onStop();
        armed = true;
        await decide().then(
          () => recorded(true),
          (error: unknown) => {
            recorded(false);
            throw error;
          },
        );
        // Every resumeStartMs without the run: asked what became of the decisions. While they
        // wait (the thread busy with another run, a job queue behind), the durable resume job
        // starts their run later, so this run waits on: ended `failed` at the first timeout, it
        // stayed `error` after that run started and succeeded.
        for (;;) {
          const timeout = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), this.deps.resumeStartMs ?? 60_000).unref());
          const result = await Promise.race([done.then(() => 'ended' as const), timeout, stopping]);
          if (result === 'stopping') {
            // Nothing written: after the restart the record is reconciled with what happened (the durable resume job starts the run).
            frames.push('error', { error: 'SERVER_STOPPING', message: 'the server stopped before the run that carries out the decisions ended; join the run again once the server is back' });
            break;
          }
          if (result === 'ended') break;
          if (followed !== undefined) {
            await Promise.race([done, stopping]);
            break;
          }
          const found = this.deps.continuationOf ? await this.deps.continuationOf(shape.userId, shape.thread.id, step, createdAt) : ({ state: 'gone' } as const);
          if (found.state === 'waiting') continue;
          if (found.state === 'continued') {
            // It started without its run.start reaching this process (lost on the way): linked, and its end awaited.
            followed = found.runId;
            await this.deps.store.setRunState(shape.runId, 'started', followed);
            await Promise.race([done, stopping, this.untilEnded(shape.userId, followed)]);
            break;
          }
          // Nothing will carry the decisions out (the thread went on without them).
          await this.deps.store.setRunState(shape.runId, 'failed', undefined, RESUME_OVERTAKEN);
          frames.push('error', { error: RESUME_OVERTAKEN.code, message: RESUME_OVERTAKEN.message });
          break;
        }
      } catch (error) {
        const vigilError = toVigilError(error);
        await this.deps.store.setRunState(shape.runId, 'failed', undefined, { code: vigilError.code, message: vigilError.message }).catch(() => undefined);
        frames.push('error', { error: vigilError.code, message: vigilError.message });
      } finally {
        this.stopping.signal.removeEventListener('abort', onStop);
        unsubscribe();
        await finish();
      }
      return undefined;
    })();
    const run = this.track(shape, frames, controller, settled);
    run.resume = { decided, continuing: () => followed };
    return run;
  }

  private async record(shape: RunShape): Promise<void> {
    await this.deps.store.createRun(newRunRecord({ ...shape, threadId: shape.thread.id, agentId: shape.agent.id, owner: this.owner }));
  }

  private track(shape: RunShape, frames: RunFrames, controller: AbortController, ending: Promise<RunOutcome | undefined>): InFlight {
    // A write of the run's end that failed (the database away) is logged, never left as an
    // unhandled rejection, which would end the process with every run in it.
    const settled = ending.catch((error: unknown) => {
      this.deps.logger.error({ err: error, runId: shape.runId }, 'a protocol run could not record its end');
      return undefined;
    });
    const run: InFlight = { runId: shape.runId, userId: shape.userId, threadId: shape.thread.id, frames, controller, settled };
    this.inFlight.set(shape.runId, run);
    void settled.then(() => {
      this.inFlight.delete(shape.runId);
      this.finished.set(shape.runId, frames);
      setTimeout(() => this.finished.delete(shape.runId), this.deps.retentionMs).unref();
    });
    return run;
  }

  /** The frames of one protocol run, and how vigil's events become them (in order, one at a time). */
  private tracker(shape: RunShape, options: { follower?: boolean } = {}): { frames: RunFrames; handle: (event: VigilEvent) => void; finish: () => Promise<void> } {
    const { userId, thread, agent, runId } = shape;
    const frames = new RunFrames();
    frames.push('metadata', { run_id: runId, thread_id: thread.id, attempt: 1 });
    const partial = new Map<string, string>();
    const meta = { run_id: runId, thread_id: thread.id, assistant_id: agent.id, graph_id: agent.kind, langgraph_node: 'agent' };
    const values = async () => {
      const messages = await this.deps.visibleMessages(userId, thread.id);
      const interrupts = await this.deps.interrupts(userId, thread.id);
      return { messages, values: { messages: messages.map(toMessageDict), ...(interrupts.length > 0 ? { __interrupt__: interrupts } : {}) }, interrupts };
    };
    const translate = async (event: VigilEvent) => {
      if (event.type === 'message.delta') {
        const text = (partial.get(event.messageId) ?? '') + event.delta;
        if (!partial.has(event.messageId)) frames.push('messages/metadata', { [event.messageId]: { metadata: meta } });
        partial.set(event.messageId, text);
        frames.push('messages', [{ type: 'AIMessageChunk', id: event.messageId, content: event.delta, additional_kwargs: {}, response_metadata: {}, tool_call_chunks: [] }, meta]);
        frames.push('messages/partial', [{ type: 'ai', id: event.messageId, content: text, additional_kwargs: {}, response_metadata: {} }]);
        frames.push('events', { event: 'on_chat_model_stream', name: 'model', run_id: event.messageId, tags: [], metadata: meta, data: { chunk: { type: 'AIMessageChunk', id: event.messageId, content: event.delta } } });
        return;
      }
      if (event.type === 'message.end') {
        const state = await values();
        const stored = state.messages.find((message) => message.id === event.message.id);
        if (stored) {
          const dict = toMessageDict(stored);
          if (stored.type === 'ai') {
            // A reply that was not streamed token by token still reaches messages-tuple clients, once.
            if (typeof event.message.metadata.streamedAs !== 'string') frames.push('messages', [{ ...dict, type: 'AIMessageChunk' }, meta]);
            frames.push('messages/complete', [dict]);
          }
          frames.push('updates', { [stored.type === 'human' ? '__input__' : 'agent']: { messages: [dict] } });
        }
        frames.push('values', state.values);
        return;
      }
      if (CUSTOM_EVENTS.has(event.type)) frames.push('custom', { vigil: event });
      if (event.type === 'approval.requested') {
        // The run stops to wait for a person: the state now carries the interrupt.
        const state = await values();
        frames.push('updates', { __interrupt__: state.interrupts });
        frames.push('values', state.values);
      }
      if (event.type === 'run.start') {
        if (!options.follower) await this.deps.store.setRunState(runId, 'started');
        frames.push('events', { event: 'on_chain_start', name: agent.kind, run_id: runId, tags: [], metadata: meta, data: { input: null } });
      }
      if (event.type === 'run.end') frames.push('events', { event: 'on_chain_end', name: agent.kind, run_id: runId, tags: [], metadata: meta, data: { output: (await values()).values } });
      if (event.type === 'run.end' && event.status === 'failed') frames.push('error', { error: event.error?.code ?? 'RUN_FAILED', message: event.error?.message ?? event.reason ?? 'the run failed' });
    };
    let chain = Promise.resolve();
    const handle = (event: VigilEvent) => {
      chain = chain.then(() => translate(event)).catch((error: unknown) => this.deps.logger.error({ err: error, runId }, 'a protocol stream frame failed'));
    };
    const finish = async () => {
      await chain;
      frames.close();
    };
    return { frames, handle, finish };
  }
}
