import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { VigilError } from '../../domain/errors.js';
import type { VigilEvent } from '../../domain/events.js';
import { redact } from '../../domain/redaction.js';
import type { RunContext } from '../../domain/run-context.js';
import { hashArguments, statusOfDecision, type ApprovalChannel, type ApprovalDecisionBody, type ApprovalRecord, type ApprovalStatus, type DecidedStatus, type ExecutionOutcome } from '../../domain/tools/approval.js';
import { RetryLater, type DueJob, type JobQueue, type ScheduleOptions } from '../job-queue.js';
import type { Admission } from '../runs/run-request.js';
import type { AgentRecord, Clock, EventBus, RunRecord, Storage } from '../ports.js';
import { STOPPING_REASON, type RunCoordinator, type RunOutcome } from '../run-coordinator.js';
import { inspectCutShortTurn, interruptedRun } from '../runs/turn-recovery.js';
import type { AlsoWithinDecided, ApprovalAsk, ApprovalDecisionWrite, ApprovalGate, ApprovalRepository } from './approval-ports.js';
import { detached } from './detached-context.js';

export const APPROVAL_EXPIRE_QUEUE = 'approval.expire';
export const APPROVAL_EXPIRING_QUEUE = 'approval.expiring';
export const APPROVAL_RESUME_QUEUE = 'approval.resume';

/** How long before its deadline `approval.expiring` goes out: a fifth of the wait, at most 10 minutes. */
const MAX_EXPIRING_LEAD_MS = 10 * 60_000;

export interface ApprovalServiceDependencies {
  repository: ApprovalRepository;
  storage: Storage;
  jobs: JobQueue;
  events: EventBus;
  coordinator: RunCoordinator;
  clock: Clock;
  logger: Logger;
  /**
   * Why edited arguments do not fit the tool's schema, or null. Given the run that asked:
   * some tools exist only within a run's thread (the check-in tools).
   */
  validate: (run: { userId: string; agentId: string; threadId: string; runId: string }, tool: string, args: Record<string, unknown>) => Promise<string | null>;
  /** The id of the model message whose tool step the thread's checkpoint waits on, or null. */
  waitingStep: (agent: AgentRecord, context: RunContext) => Promise<string | null>;
}

/**
 * Tool calls waiting for a person (I16): records them, takes decisions (the first wins),
 * expires them on a durable deadline (expiry is not a refusal), supersedes them when the
 * person writes, and resumes the waiting run once every call of its step is decided —
 * through the job queue, so a crash between a decision and the resume loses nothing.
 */
export class ApprovalService implements ApprovalGate {
  constructor(private readonly deps: ApprovalServiceDependencies) {}

  /** Register the job handlers (before the queue starts). */
  async attach(): Promise<void> {
    const { jobs } = this.deps;
    // Detached: a delivery must never run inside the async context of the run that scheduled it.
    await jobs.work(APPROVAL_EXPIRE_QUEUE, (job) => detached(() => this.onExpire(job)));
    await jobs.work(APPROVAL_EXPIRING_QUEUE, (job) => detached(() => this.onExpiring(job)));
    await jobs.work(APPROVAL_RESUME_QUEUE, (job) => detached(() => this.onResume(job)));
  }

  /**
   * After a restart: every pending request keeps its deadline (re-armed; one already past
   * expires now), so none waits forever. Jobs are durable; scheduling is idempotent per key.
   */
  async recover(): Promise<void> {
    const now = this.deps.clock.now();
    for (const record of await this.deps.repository.listPending()) {
      if (Date.parse(record.expiresAt) <= now.getTime()) await this.expire(record.id);
      else await this.armDeadline(record);
    }
  }

  // ---------- the tool loop's gate ----------
  async requestStep(input: { run: { runId: string; threadId: string; userId: string; agentId: string }; messageId: string; attended: boolean; calls: ApprovalAsk[] }): Promise<ApprovalRecord[]> {
    const now = this.deps.clock.now();
    const { records, created } = await this.deps.repository.request(
      input.calls.map((call) => ({
        id: randomUUID(),
        userId: input.run.userId,
        agentId: input.run.agentId,
        threadId: input.run.threadId,
        runId: input.run.runId,
        messageId: input.messageId,
        toolCallId: call.toolCallId,
        tool: call.tool,
        arguments: redact(call.args) as Record<string, unknown>,
        argumentsHash: hashArguments(call.args),
        attended: input.attended,
        requestedAt: now.toISOString(),
        expiresAt: new Date(now.getTime() + call.timeoutMs).toISOString(),
      })),
    );
    for (const record of created) {
      await detached(() => this.armDeadline(record));
      this.deps.logger.info({ threadId: record.threadId, runId: record.runId, approvalId: record.id, tool: record.tool, expiresAt: record.expiresAt, attended: record.attended }, 'approval requested');
      this.emit({ type: 'approval.requested', ...this.eventBase(record), arguments: record.arguments, expiresAt: record.expiresAt, attended: record.attended });
    }
    return records;
  }

  beginExecution(id: string): Promise<boolean> {
    return this.deps.repository.beginExecution(id);
  }

  finishExecution(id: string, result: string, outcome: ExecutionOutcome): Promise<void> {
    return this.deps.repository.finishExecution(id, result, outcome);
  }

  reread(id: string): Promise<ApprovalRecord | undefined> {
    return this.deps.repository.getById(id);
  }

  // ---------- people ----------
  list(userId: string, options: { limit: number; status?: ApprovalStatus | undefined; threadId?: string | undefined }): Promise<ApprovalRecord[]> {
    return this.deps.repository.list(userId, options);
  }

  /** Only the owner's: another user's id answers APPROVAL_NOT_FOUND (I12). */
  async get(userId: string, id: string): Promise<ApprovalRecord> {
    const record = await this.deps.repository.get(userId, id);
    if (!record) throw new VigilError('APPROVAL_NOT_FOUND', `no approval "${id}"`);
    return record;
  }

  async hasPending(threadId: string): Promise<boolean> {
    return (await this.deps.repository.listPending({ threadId })).length > 0;
  }

  /**
   * A person's decision. The first decision wins; the same decision again answers the
   * record as it is; a different one is APPROVAL_ALREADY_DECIDED (409). A decision after
   * the deadline comes too late even when the expiry job has not run yet: the request is
   * expired then and there (I16: silence until the deadline is expiry), and the decision
   * is refused like any that lost.
   */
  async decide(userId: string, id: string, body: ApprovalDecisionBody, channel: ApprovalChannel = 'api'): Promise<ApprovalRecord> {
    const record = await this.get(userId, id);
    const status = statusOfDecision(body.decision);
    if (record.status !== 'pending') return sameDecisionOrConflict(record, status, body);
    const now = this.deps.clock.now();
    if (Date.parse(record.expiresAt) <= now.getTime()) return sameDecisionOrConflict(await this.expireLate(record), status, body);
    await this.checkEdit(record, body);
    const scheduled = new Set<string>();
    const decided = await this.deps.repository.decide(id, decisionWrite(userId, body, channel, now), this.resumeWithin(scheduled));
    if (!decided) {
      // Gone (its thread was deleted while the decision was on its way): 404, as for any
      // request that is not there. Read as the stale pending record it was, it answered 409
      // "already pending".
      const current = await this.stillThere(id);
      // Still pending: the deadline passed while the decision was on its way.
      return sameDecisionOrConflict(current.status === 'pending' ? await this.expireLate(current) : current, status, body);
    }
    await this.announceDecided(decided, channel);
    await this.resumeWhenSettled(decided, scheduled);
    return decided;
  }

  /**
   * Several decisions taken together (a protocol resume decides every call of a step at
   * once, I11): each is checked first (still pending and before its deadline, an edit's
   * arguments fitting the tool), then all are recorded in one transaction, so either every
   * one wins or none is recorded. A refusal (400 arguments, 409 decided or too late) leaves
   * every request as it was, but for one found past its deadline, which is expired then and
   * there, as a single decision would find it.
   */
  async decideAll(userId: string, decisions: ReadonlyArray<{ id: string; body: ApprovalDecisionBody }>, channel: ApprovalChannel = 'api'): Promise<ApprovalRecord[]> {
    await this.checkAll(userId, decisions);
    const now = this.deps.clock.now();
    const scheduled = new Set<string>();
    const written = await this.deps.repository.decideAll(
      decisions.map(({ id, body }) => ({ id, decision: decisionWrite(userId, body, channel, now) })),
      this.resumeWithin(scheduled),
    );
    if (!written) {
      // Another decision, or the deadline, won one of them in between: none was recorded. Say which.
      await this.checkAll(userId, decisions);
      throw new VigilError('APPROVAL_ALREADY_DECIDED', 'one of the approvals was decided, or reached its deadline, while the decisions were recorded; none was recorded');
    }
    for (const decided of written) await this.announceDecided(decided, channel);
    for (const decided of written) await this.resumeWhenSettled(decided, scheduled);
    return written;
  }

  /** A person's decision recorded: logged, published, its deadline disarmed. */
  private async announceDecided(decided: ApprovalRecord, channel: ApprovalChannel): Promise<void> {
    this.deps.logger.info({ threadId: decided.threadId, approvalId: decided.id, status: decided.status, channel }, 'approval decided');
    this.emit({ type: 'approval.decided', ...this.eventBase(decided), status: decided.status as 'approved' | 'edited' | 'rejected', channel });
    await this.disarmDeadline(decided);
  }

  /** An edit's arguments must fit the tool (400 APPROVAL_ARGUMENTS_INVALID). */
  private async checkEdit(record: ApprovalRecord, body: ApprovalDecisionBody): Promise<void> {
    if (body.decision !== 'edit') return;
    const problem = await this.deps.validate(record, record.tool, body.arguments ?? {});
    if (problem !== null) throw new VigilError('APPROVAL_ARGUMENTS_INVALID', `the edited arguments do not fit ${record.tool}: ${problem}`, { details: { approvalId: record.id, tool: record.tool, problem } });
  }

  /**
   * Every decision of a batch checked, nothing recorded: each request pending (409 when
   * decided; one past its deadline is expired now, and 409) and an edit fitting its tool (400).
   */
  async checkAll(userId: string, decisions: ReadonlyArray<{ id: string; body: ApprovalDecisionBody }>): Promise<ApprovalRecord[]> {
    const records = await Promise.all(decisions.map(({ id }) => this.get(userId, id)));
    const now = this.deps.clock.now().getTime();
    for (const [index, record] of records.entries()) {
      const body = decisions[index]!.body;
      if (record.status !== 'pending') throw new VigilError('APPROVAL_ALREADY_DECIDED', `the approval ${record.id} is already ${record.status}`, { details: { approvalId: record.id, status: record.status } });
      if (Date.parse(record.expiresAt) <= now) {
        const expired = await this.expireLate(record);
        throw new VigilError('APPROVAL_ALREADY_DECIDED', `the approval ${record.id} is already ${expired.status}`, { details: { approvalId: record.id, status: expired.status } });
      }
      await this.checkEdit(record, body);
    }
    return records;
  }

  /** A person's message on the thread, on receipt: its pending calls become moot (superseded, recorded; the model is told). */
  async supersedeThread(threadId: string, userId: string): Promise<void> {
    for (const record of await this.deps.repository.listPending({ threadId })) {
      const decided = await this.deps.repository.decide(record.id, { status: 'superseded', decidedBy: userId, channel: 'system', decidedAt: this.deps.clock.now().toISOString(), message: 'the person sent a new message' });
      if (!decided) continue;
      this.deps.logger.info({ threadId, approvalId: record.id, tool: record.tool }, 'approval superseded by a person\'s message');
      this.emit({ type: 'approval.decided', ...this.eventBase(decided), status: 'superseded', channel: 'system' });
      await this.disarmDeadline(decided);
    }
  }

  /**
   * Right before a person's message is answered. Calls already decided are not moot: a
   * person who approved a call meant it, so when the step the thread waits on has calls
   * decided (approved, edited, rejected or expired) whose resume has not run yet, that step
   * is resumed now, before the message's own run: the approved calls run (once, I16), a
   * rejection reaches the model as the person's, a superseded call as superseded, and the
   * message is then answered by a model that knows what happened. A step whose calls were
   * all still pending was superseded on receipt and is left to the message's run.
   */
  async resumeDecidedStep(threadId: string): Promise<void> {
    const waiting = await this.decidedStepWaiting(threadId);
    // Not caught: if the decided step cannot be carried out now, the message is refused
    // rather than answered by a model told, wrongly, that the calls were superseded; the
    // person's retry finds the step still waiting.
    if (waiting) await this.resume(waiting, { forPerson: true });
  }

  /**
   * Whether the thread waits on a tool step: calls still waiting for a person, or a step
   * every call of which is decided but whose resume has not run yet. A run the agent starts
   * on its own (a follow-up, a check-in, a schedule, a webhook) must not start then: it
   * would close the step as if nobody had decided, and an approved call would never run (I16).
   */
  async awaitingApproval(threadId: string): Promise<boolean> {
    return (await this.hasPending(threadId)) || (await this.decidedStepWaiting(threadId)) !== undefined;
  }

  /**
   * The thread's newest step when its calls are all decided (some not superseded) and the
   * checkpoint still waits on it: a resume still to run. A step resumed long ago is the
   * common case, answered without a lock or a run (the checkpoint read outside the lock; a
   * resume checks again under it).
   */
  private async decidedStepWaiting(threadId: string): Promise<ApprovalRecord | undefined> {
    const newest = await this.deps.repository.newestOfThread(threadId);
    if (!newest) return undefined;
    const step = await this.deps.repository.listStep(threadId, newest.messageId);
    if (step.some((call) => call.status === 'pending') || step.every((call) => call.status === 'superseded')) return undefined;
    const agent = await this.deps.storage.agents.get(newest.userId, newest.agentId);
    if (!agent) return undefined;
    const probe: RunContext = { runId: randomUUID(), threadId, userId: newest.userId, agentId: newest.agentId, trigger: 'user', meta: {}, requestedAt: this.deps.clock.now().toISOString(), correlationId: randomUUID() };
    return (await this.deps.waitingStep(agent, probe)) === newest.messageId ? newest : undefined;
  }

  /**
   * What became of a step decided at `since` or later, for a record that follows the run
   * continuing it (a protocol resume) and whose process is gone: `continued` by that run (the
   * resumed run carries the waiting run's correlation id, and was requested after the
   * decisions); `waiting` for it (every call decided and the checkpoint still waits on the
   * step: the durable resume job starts it, after a restart too); `undecided` (a call still
   * pending: the decisions were never recorded); `gone` (nothing will ever continue it: the
   * step or the run that waited is gone, or the thread moved on without it).
   */
  async continuationOf(userId: string, threadId: string, messageId: string, since: string): Promise<{ state: 'continued'; runId: string } | { state: 'waiting' | 'undecided' | 'gone' }> {
    const { storage } = this.deps;
    const step = (await this.deps.repository.listStep(threadId, messageId)).filter((call) => call.userId === userId);
    if (step.length === 0) return { state: 'gone' };
    if (step.some((call) => call.status === 'pending')) return { state: 'undecided' };
    const waitingRun = await storage.runs.get(userId, step[0]!.runId);
    if (!waitingRun) return { state: 'gone' };
    const continuing = async () => {
      const runs = await storage.runs.listByThread(userId, threadId, { limit: 50 });
      return runs.filter((run) => run.id !== waitingRun.id && run.correlationId === waitingRun.correlationId && run.requestedAt >= since).sort((a, b) => (a.requestedAt < b.requestedAt ? -1 : 1))[0];
    };
    const found = await continuing();
    if (found) return { state: 'continued', runId: found.id };
    const agent = await storage.agents.get(userId, waitingRun.agentId);
    if (!agent) return { state: 'gone' };
    const probe: RunContext = { runId: randomUUID(), threadId, userId, agentId: agent.id, trigger: waitingRun.trigger, meta: {}, requestedAt: this.deps.clock.now().toISOString(), correlationId: randomUUID() };
    if ((await this.deps.waitingStep(agent, probe)) === messageId) return { state: 'waiting' };
    // The checkpoint moved on: a run took the step up, recorded before it did (read again, in case it came meanwhile).
    const late = await continuing();
    return late ? { state: 'continued', runId: late.id } : { state: 'gone' };
  }

  // ---------- deadlines ----------
  /** Nobody answered: `expired`, never a refusal (I16); the model is told and the run goes on. */
  async expire(id: string): Promise<void> {
    const scheduled = new Set<string>();
    const expired = await this.deps.repository.decide(id, { status: 'expired', decidedBy: 'system', channel: 'system', decidedAt: this.deps.clock.now().toISOString() }, this.resumeWithin(scheduled));
    if (!expired) return;
    this.deps.logger.info({ threadId: expired.threadId, approvalId: id, tool: expired.tool, expiresAt: expired.expiresAt }, 'approval expired: nobody answered');
    this.emit({ type: 'approval.expired', ...this.eventBase(expired), expiresAt: expired.expiresAt });
    await this.deps.jobs.cancel(APPROVAL_EXPIRING_QUEUE, id).catch(() => false);
    await this.resumeWhenSettled(expired, scheduled);
  }

  /** A request found past its deadline before its job ran: expired now; what it became (another caller may have won, or its thread gone). */
  private async expireLate(record: ApprovalRecord): Promise<ApprovalRecord> {
    await this.expire(record.id);
    await this.disarmDeadline(record); // its job, due later, has nothing left to do
    return this.stillThere(record.id);
  }

  /**
   * A request re-read after a decision on it did not win: APPROVAL_NOT_FOUND when it is no
   * longer there (its thread was deleted in between, which takes its approvals with it).
   */
  private async stillThere(id: string): Promise<ApprovalRecord> {
    const current = await this.deps.repository.getById(id);
    if (!current) throw new VigilError('APPROVAL_NOT_FOUND', `no approval "${id}": it was deleted with its thread`);
    return current;
  }

  private async onExpire(job: DueJob): Promise<void> {
    const id = String(job.payload.approvalId ?? job.key);
    const record = await this.deps.repository.getById(id);
    if (!record || record.status !== 'pending') return;
    if (Date.parse(record.expiresAt) > this.deps.clock.now().getTime() + 1_000) {
      await this.armDeadline(record); // an early delivery: wait for the real deadline
      return;
    }
    await this.expire(id);
  }

  private async onExpiring(job: DueJob): Promise<void> {
    const record = await this.deps.repository.getById(String(job.payload.approvalId ?? job.key));
    if (!record || record.status !== 'pending') return;
    this.emit({ type: 'approval.expiring', ...this.eventBase(record), expiresAt: record.expiresAt });
  }

  private async armDeadline(record: ApprovalRecord): Promise<void> {
    const expiresAt = Date.parse(record.expiresAt);
    const wait = expiresAt - Date.parse(record.requestedAt);
    const lead = Math.min(Math.floor(wait / 5), MAX_EXPIRING_LEAD_MS);
    await this.deps.jobs.schedule({ queue: APPROVAL_EXPIRE_QUEUE, key: record.id, dueAt: new Date(expiresAt), payload: { approvalId: record.id } });
    if (expiresAt - lead > this.deps.clock.now().getTime()) {
      await this.deps.jobs.schedule({ queue: APPROVAL_EXPIRING_QUEUE, key: record.id, dueAt: new Date(expiresAt - lead), payload: { approvalId: record.id } });
    }
  }

  private async disarmDeadline(record: ApprovalRecord): Promise<void> {
    await this.deps.jobs.cancel(APPROVAL_EXPIRE_QUEUE, record.id).catch(() => false);
    await this.deps.jobs.cancel(APPROVAL_EXPIRING_QUEUE, record.id).catch(() => false);
  }

  // ---------- resuming ----------
  /**
   * The resume of each step a decision settles, scheduled in the decision's own transaction
   * (its key added to `scheduled`): the decision and its resume commit together, so a
   * process that dies right after a decision, or a write of the job that fails, never leaves
   * a decided step that nothing resumes (the approved call would never run, the thread would
   * wait for ever, and a person deciding again would be answered as if all were well).
   */
  private resumeWithin(scheduled: Set<string>): AlsoWithinDecided {
    return async (transaction, steps) => {
      for (const step of steps) {
        if (step.length === 0 || !settles(step)) continue;
        await this.scheduleResume(step[0]!, { within: transaction });
        scheduled.add(stepKeyOf(step[0]!));
      }
    };
  }

  /**
   * Once every call of the step is decided, the waiting run resumes (a durable job). Two
   * calls of a step decided at once, each in its own transaction, may each have seen the
   * other still pending there: checked again once committed, unless the decision's own
   * transaction scheduled it (`scheduledWithin`).
   */
  private async resumeWhenSettled(record: ApprovalRecord, scheduledWithin?: ReadonlySet<string>): Promise<void> {
    if (scheduledWithin?.has(stepKeyOf(record))) return;
    const step = await this.deps.repository.listStep(record.threadId, record.messageId);
    if (!settles(step)) return;
    await this.scheduleResume(record);
  }

  private async scheduleResume(record: ApprovalRecord, options?: ScheduleOptions): Promise<void> {
    await this.deps.jobs.schedule({ queue: APPROVAL_RESUME_QUEUE, key: stepKeyOf(record), dueAt: this.deps.clock.now(), payload: { approvalId: record.id } }, options);
  }

  private async onResume(job: DueJob): Promise<void> {
    const record = await this.deps.repository.getById(String(job.payload.approvalId));
    if (!record) return;
    const outcome = await this.resume(record);
    // A shutdown stopped the resumed run: the job comes again after the restart, whose
    // recovery (admitCutShort) finishes the turn, as a follow-up's is finished.
    if (outcome?.run.status === 'cancelled' && outcome.run.reason === STOPPING_REASON) throw new RetryLater('the resumed run was interrupted by a shutdown');
  }

  /** Resume the run that waits on the record's step, if the thread's checkpoint still waits on it. */
  private async resume(record: ApprovalRecord, options: { forPerson?: boolean } = {}): Promise<RunOutcome | undefined> {
    const { storage, coordinator, clock } = this.deps;
    const agent = await storage.agents.get(record.userId, record.agentId);
    const waitingRun = await storage.runs.get(record.userId, record.runId);
    const log = this.deps.logger.child({ threadId: record.threadId, waitingRunId: record.runId, approvalId: record.id });
    if (!agent || !waitingRun) {
      log.warn({ agentFound: agent !== undefined, waitingRunFound: waitingRun !== undefined }, 'a decided approval has nothing to resume: its agent or the run that waited is gone');
      return undefined;
    }
    const context: RunContext = {
      runId: randomUUID(),
      threadId: record.threadId,
      userId: record.userId,
      agentId: record.agentId,
      // The resumed run is the same kind of run as the one that waited (attended or not).
      trigger: waitingRun.trigger,
      meta: { ...waitingRun.meta },
      requestedAt: clock.now().toISOString(),
      // The resumed run is found by the waiting run's correlation id.
      correlationId: waitingRun.correlationId,
    };
    const outcome = await coordinator.tryRun({
      context,
      agent,
      input: null,
      whenBusy: 'wait',
      // Before a person's message: ask a run of the agent's own on the thread to yield, as that message would (I8).
      ...(options.forPerson ? { forPerson: true } : {}),
      // Nothing is reserved for the resumed run ahead (its admission checks the step, not the
      // budget): each of its model calls, a retry's included, reserves the agent's daily
      // autonomy budget as it comes when the run is one of autonomy's (I5).
      firstCallPrepaid: false,
      // Under the thread's lock: resume only if the checkpoint still waits on this step (a
      // repeated delivery, or a person's message in between, finds nothing to resume) — or
      // finish the turn of a run that took the step up and was cut short (a crash).
      admit: async (admitted) => ((await this.deps.waitingStep(agent, admitted)) === record.messageId ? { admitted: true } : this.admitCutShort(record, agent, waitingRun, admitted, log)),
    });
    if ('declined' in outcome) {
      log.debug({ reason: outcome.declined }, 'nothing to resume');
      return undefined;
    }
    log.info({ runId: outcome.run.id, status: outcome.run.status }, 'resumed after the approvals were decided');
    return outcome;
  }

  /**
   * Under the thread's lock, the checkpoint no longer waiting on the record's step: it was
   * taken up. When the run that took it up is the thread's newest and was cut short (its
   * process died after a decided call ran; the resume job is then delivered again), its
   * turn is finished from the checkpoint, once, as a follow-up's is (turn-recovery.ts):
   * the calls already made are not made again, the model goes on from their results, and
   * a plan goes on to its end. Without this the turn stayed unfinished, the person got no
   * reply, and a plan stayed `active` with nothing working on it. A repeated delivery after
   * a resume that ended (or a person's message, or another run since) finds nothing to do.
   */
  private async admitCutShort(record: ApprovalRecord, agent: AgentRecord, waitingRun: RunRecord, context: RunContext, log: Logger): Promise<Admission> {
    const { storage, coordinator, clock } = this.deps;
    const [newest] = await storage.runs.listByThread(record.userId, record.threadId, { limit: 1 });
    const tookItUp = newest !== undefined && newest.id !== waitingRun.id && newest.correlationId === waitingRun.correlationId;
    if (!tookItUp || !interruptedRun(newest)) return { admitted: false, reason: 'not_waiting' };
    const { turn } = await inspectCutShortTurn({ coordinator, storage }, agent, context, { takenUpStep: record.messageId }, { runId: newest.id, record: newest }, clock.now().toISOString());
    log.warn({ previousRunId: newest.id, previousStatus: newest.status, turn }, 'finishing the turn of a resumed run that was cut short');
    return turn === 'unanswered' ? { admitted: true } : { admitted: false, reason: `turn_${turn}` };
  }

  private eventBase(record: ApprovalRecord) {
    return { threadId: record.threadId, runId: record.runId, at: this.deps.clock.now().toISOString(), approvalId: record.id, toolCallId: record.toolCallId, tool: record.tool };
  }

  private emit(event: VigilEvent): void {
    this.deps.events.publish(event);
  }
}

/** Every call of the step decided, and none superseded (then the person's own run answers): the waiting run resumes. */
function settles(step: readonly ApprovalRecord[]): boolean {
  return !step.some((call) => call.status === 'pending' || call.status === 'superseded');
}

/** The resume job's key: one resume per step. */
function stepKeyOf(record: ApprovalRecord): string {
  return `${record.threadId}:${record.messageId}`;
}

function sameDecisionOrConflict(record: ApprovalRecord, status: DecidedStatus, body: ApprovalDecisionBody): ApprovalRecord {
  const same = record.status === status && (status !== 'edited' || hashArguments(record.editedArguments ?? {}) === hashArguments(body.arguments ?? {}));
  if (same) return record;
  throw new VigilError('APPROVAL_ALREADY_DECIDED', `the approval is already ${record.status}`, { details: { status: record.status } });
}

/** What a person's decision writes: checked against the deadline by the repository (beforeDeadline). */
function decisionWrite(userId: string, body: ApprovalDecisionBody, channel: ApprovalChannel, now: Date): ApprovalDecisionWrite {
  return {
    status: statusOfDecision(body.decision),
    decidedBy: userId,
    channel,
    decidedAt: now.toISOString(),
    message: body.message ?? null,
    editedArguments: body.decision === 'edit' ? (body.arguments ?? {}) : null,
    beforeDeadline: now.toISOString(),
  };
}
