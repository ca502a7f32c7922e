import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { VigilError, isVigilError } from '../../domain/errors.js';
import type { MessageContent } from '../../domain/message-content.js';
import type { AlsoWithinThread, ThreadRecord } from '../../app/ports.js';
import { newRunRecord, type ProtocolRunRecord } from '../../app/langgraph/protocol-store.js';
import type { RunOutcome } from '../../app/run-coordinator.js';
import { messageContentSchema } from '../schemas.js';
import { checkpointIdOf, toMessageDict, toRun } from './convert.js';
import { THREAD_ID_MESSAGE, UUID_PATTERN, anyObject, cancelRunQuery, errorBody, joinQuery, joinStreamQuery, listRunsQuery, runBody, streamNamespaceQuery, threadIdParams, threadRunParams, type RunBody, type StreamMode } from './protocol-schemas.js';
import { clientMetadata, findThread, pendingApprovals, resolveAssistant, liveRunningRunOf, selectFields, valuesOf, visibleMessages, type ProtocolContext } from './protocol-threads.js';
import { CANCEL_REASONS, type InFlight, type ProtocolRunManager } from './run-manager.js';
import { RunFrames, writeFrames } from './run-stream.js';
import { lastEventIdOf } from '../sse.js';

type Json = Record<string, unknown>;

/** `events` maps as far as vigil's events go: the run's start and end (on_chain_*) and the model's tokens (on_chat_model_stream). */
const SUPPORTED_MODES: ReadonlySet<StreamMode> = new Set(['values', 'updates', 'messages', 'messages-tuple', 'custom', 'events']);

/** The one person's message a run's input carries. */
function contentOf(input: unknown): MessageContent {
  const messages = (input as { messages?: unknown } | null)?.messages;
  const extra = input && typeof input === 'object' ? Object.keys(input).filter((key) => key !== 'messages') : [];
  if (extra.length > 0) throw new VigilError('UNSUPPORTED_OPTION', `input keys vigil's graphs do not have: ${extra.join(', ')} (the state is messages only)`);
  if (!Array.isArray(messages) || messages.length !== 1) throw new VigilError('VALIDATION_FAILED', 'input.messages must hold exactly one message: the person\'s (vigil writes every other message itself)');
  const message = messages[0] as { type?: unknown; role?: unknown; content?: unknown };
  const role = message?.type ?? message?.role;
  if (role !== 'human' && role !== 'user') throw new VigilError('VALIDATION_FAILED', 'input.messages[0] must be a human message (type "human" or role "user")');
  const content = messageContentSchema.safeParse(message.content);
  if (!content.success) throw new VigilError('VALIDATION_FAILED', `input.messages[0].content: ${content.error.issues.map((issue) => issue.message).join('; ')}`);
  return content.data as MessageContent;
}

function modesOf(streamMode: RunBody['stream_mode']): Set<StreamMode> {
  const modes = new Set<StreamMode>(streamMode === undefined ? ['values'] : Array.isArray(streamMode) ? streamMode : [streamMode]);
  const refused = [...modes].filter((mode) => !SUPPORTED_MODES.has(mode));
  if (refused.length > 0) throw new VigilError('UNSUPPORTED_OPTION', `stream modes vigil does not serve: ${refused.join(', ')} (it serves ${[...SUPPORTED_MODES].join(', ')})`);
  return modes;
}

/** Options vigil cannot honour are refused with 422, never ignored. */
function refuseUnsupported(body: RunBody): void {
  const refuse = (what: string, why: string) => {
    throw new VigilError('UNSUPPORTED_OPTION', `${what} is not supported: ${why}`);
  };
  if (body.interrupt_before !== undefined || body.interrupt_after !== undefined) refuse('interrupt_before/interrupt_after', "vigil's graphs stop only for tool approvals");
  if (body.webhook !== undefined) refuse('webhook', 'use outbound webhooks (POST /api/agents/{id}/webhooks)');
  if (body.feedback_keys !== undefined) refuse('feedback_keys', 'vigil has no LangSmith feedback');
  if (body.after_seconds !== undefined && body.after_seconds > 0) refuse('after_seconds', 'use a one-shot schedule (POST /api/schedules)');
  if (body.multitask_strategy === 'rollback') refuse('multitask_strategy "rollback"', 'vigil never deletes messages (I14); use "interrupt" to cancel the run in progress and keep what it wrote');
  if (body.durability === 'exit') refuse('durability "exit"', 'vigil checkpoints every step');
  if (body.checkpoint_during === false) refuse('checkpoint_during=false', 'vigil checkpoints every step');
  if (body.langsmith_tracer !== undefined) refuse('langsmith_tracer', 'vigil traces with OpenTelemetry');
  const configurable = (body.config?.configurable ?? {}) as Json;
  const configKeys = Object.keys(body.config ?? {}).filter((key) => key !== 'configurable');
  const configurableKeys = Object.keys(configurable).filter((key) => !['thread_id', 'assistant_id', 'graph_id', 'run_id', 'checkpoint_ns'].includes(key));
  if (configKeys.length > 0 || configurableKeys.length > 0) refuse(`config (${[...configKeys, ...configurableKeys.map((key) => `configurable.${key}`)].join(', ')})`, "a run uses its assistant's settings; change them with PATCH /assistants/{id}");
  if (body.context !== undefined && Object.keys(body.context).length > 0) refuse('context', "a run uses its assistant's context; change it with PATCH /assistants/{id}");
}

const decisionSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('approve') }).strict(),
  z.object({ type: z.literal('edit'), edited_action: z.object({ name: z.string().min(1), args: z.record(z.string(), z.unknown()) }).strict() }).strict(),
  z.object({ type: z.literal('reject'), message: z.string().trim().min(1).max(2000).optional() }).strict(),
]);
type Decision = z.infer<typeof decisionSchema>;

/** `command.resume.decisions`: one decision per waiting tool call, in the interrupt's order. Nothing else a command can do is supported. */
function decisionsOf(command: unknown, input: unknown): Decision[] {
  if (input !== undefined && input !== null) throw new VigilError('VALIDATION_FAILED', 'a run resumes with command or starts with input, not both');
  const parsed = z.object({ resume: z.object({ decisions: z.array(decisionSchema).min(1).max(100) }).strict() }).strict().safeParse(command);
  if (!parsed.success) throw new VigilError('UNSUPPORTED_OPTION', 'vigil supports command.resume.decisions only ([{ type: "approve" | "edit" | "reject", … }], one per waiting tool call); goto, update and other resume values are not supported');
  return parsed.data.resume.decisions;
}

/**
 * Why a run waited for did not finish, as LangGraph's wait reports it (`__error__`, which
 * the SDK's `runs.wait` throws), or undefined. A run of this process that failed says so in
 * its outcome; a resume (command.resume) has no outcome of its own: its failure is the error
 * its stream ended with (the run that continued the thread failed, the decisions lost to
 * another, no run continued the thread). A cancelled run is no error: its values are what it
 * wrote, as a cancel's answer says.
 */
function failureOf(run: InFlight, outcome: RunOutcome | undefined): { error: string; message: string } | undefined {
  if (outcome?.run.status === 'failed') return { error: outcome.run.errorCode ?? 'RUN_FAILED', message: outcome.run.errorMessage ?? outcome.run.reason ?? 'the run failed' };
  const ended = run.frames.frames.findLast((frame) => frame.event === 'error')?.data as { error?: unknown; message?: unknown } | undefined;
  if (ended === undefined || ended.error === 'RUN_CANCELLED') return undefined;
  return { error: String(ended.error ?? 'RUN_FAILED'), message: String(ended.message ?? 'the run failed') };
}

/** Runs on a thread, stateless runs, streams, joins and cancels. */
export function protocolRunRoutes(context: ProtocolContext, runs: ProtocolRunManager, heartbeatMs: number): FastifyPluginAsyncZod {
  const { deps, store } = context;

  async function finalValues(userId: string, threadId: string): Promise<Json> {
    return valuesOf(context, userId, threadId);
  }

  /** What a follower of a run needs: its shape, and the id of vigil's run behind it. */
  async function followTarget(userId: string, threadId: string, runId: string) {
    const row = await store.getRun(userId, runId);
    const thread = await deps.conversations.getThread(userId, threadId);
    const agent = await deps.agents.get(userId, thread.agentId);
    return { shape: { runId, userId, thread, agent }, vigilRunId: row?.vigilRunId ?? runId };
  }

  /**
   * The frames of a run in progress that this process does not run (another instance on the
   * same PostgreSQL database runs it), followed from the thread's events; undefined when the
   * run is not in progress.
   */
  async function followed(userId: string, threadId: string, runId: string, run: Json): Promise<RunFrames | undefined> {
    if (!['pending', 'running'].includes(String(run.status))) return undefined;
    const { shape, vigilRunId } = await followTarget(userId, threadId, runId);
    return runs.follow(shape, vigilRunId);
  }

  /** The frames of a run that ended (here long ago, or on another instance), from its events still in the bus's window. */
  async function replayed(userId: string, threadId: string, runId: string): Promise<RunFrames | undefined> {
    const { shape, vigilRunId } = await followTarget(userId, threadId, runId);
    return runs.replayEnded(shape, vigilRunId);
  }

  async function endOf(frames: RunFrames | undefined): Promise<void> {
    while (frames && !frames.done) await frames.changed(60_000);
  }

  async function runDto(userId: string, threadId: string, runId: string): Promise<Json> {
    const stored = await store.getRun(userId, runId);
    // A resume whose process stopped before its run started: in step with what happened since.
    const row = stored && (await runs.reconcile(stored));
    const run = await deps.conversations.getRun(userId, row?.vigilRunId ?? runId).catch((error: unknown) => {
      if (isVigilError(error) && error.code === 'RUN_NOT_FOUND') return undefined;
      throw error;
    });
    // A run of a deleted thread is no run of a thread made since with its id (its protocol row went with the thread).
    const owner = row ?? (run?.threadDeleted === true ? undefined : run);
    if (owner === undefined || owner.threadId !== threadId) throw new VigilError('RUN_NOT_FOUND', `no run "${runId}" on thread "${threadId}"`);
    return { ...toRun(run, row), run_id: runId };
  }

  /**
   * The decisions on the thread's waiting tool calls, every one checked before anything is
   * recorded (I11): one per call, an edit keeps the call's tool and fits its schema, each
   * call still pending and before its deadline; a refusal is the request's 4xx. Returns what
   * records them, all in one transaction (ApprovalService.decideAll): should a call be
   * decided elsewhere, or reach its deadline, between the check and the recording, none is
   * recorded and the run reports the conflict.
   */
  async function decider(userId: string, threadId: string, decisions: Decision[]): Promise<{ step: string; decide: () => Promise<void> }> {
    const approvals = deps.approvals;
    const waiting = await pendingApprovals(context, userId, threadId);
    if (!approvals || waiting.length === 0) throw new VigilError('UNSUPPORTED_OPTION', `thread "${threadId}" waits for no decision; there is nothing to resume`);
    if (decisions.length !== waiting.length) throw new VigilError('VALIDATION_FAILED', `the thread waits for ${waiting.length} decision(s), one per tool call; ${decisions.length} given`);
    decisions.forEach((decision, index) => {
      if (decision.type === 'edit' && decision.edited_action.name !== waiting[index]!.tool) throw new VigilError('VALIDATION_FAILED', `decision ${index}: an edit keeps the tool (${waiting[index]!.tool})`);
    });
    const batch = decisions.map((decision, index) => ({
      id: waiting[index]!.id,
      body: decision.type === 'approve' ? { decision: 'approve' as const } : decision.type === 'edit' ? { decision: 'edit' as const, arguments: decision.edited_action.args } : { decision: 'reject' as const, ...(decision.message ? { message: decision.message } : {}) },
    }));
    await approvals.checkAll(userId, batch);
    return {
      step: waiting[0]!.messageId,
      decide: async () => {
        await approvals.decideAll(userId, batch, 'langgraph');
      },
    };
  }

  /**
   * Validate, bind the thread to the assistant, apply the multitask strategy, start the run.
   * `again`: the thread this run was to make was made meanwhile by another request of the
   * same user (concurrent if_not_exists=create); everything is checked again on it.
   */
  async function startRun(request: FastifyRequest, body: RunBody, threadId: string | null, again = false): Promise<{ run: InFlight; thread: ThreadRecord; modes: Set<StreamMode>; stateless: boolean }> {
    const { userId } = request;
    refuseUnsupported(body);
    const modes = modesOf(body.stream_mode);
    const decisions = body.command !== undefined ? decisionsOf(body.command, body.input) : undefined;
    if (decisions && threadId === null) throw new VigilError('UNSUPPORTED_OPTION', 'a stateless run has nothing to resume');
    const content = decisions ? undefined : contentOf(body.input);
    const metadata = clientMetadata(body.metadata);
    let existing: ThreadRecord | undefined;
    if (threadId !== null) {
      if (body.on_completion !== undefined) throw new VigilError('UNSUPPORTED_OPTION', 'on_completion applies to stateless runs only');
      existing = await findThread(context, userId, threadId);
      if (!existing && body.if_not_exists !== 'create') throw new VigilError('THREAD_NOT_FOUND', `no thread "${threadId}"`);
      if (!existing && !UUID_PATTERN.test(threadId)) throw new VigilError('VALIDATION_FAILED', `thread_id: ${THREAD_ID_MESSAGE}`);
    }
    // Every check of the thread's state before anything is written (I11): a refused run
    // leaves no thread made (stateless, or if_not_exists) and none bound to its assistant.
    // A thread still to be made has no messages, no run and nothing waiting.
    // useStream names the state it shows; vigil runs from the latest state only (history is never rewritten, I14).
    const checkpointId = body.checkpoint_id ?? (body.checkpoint as { checkpoint_id?: unknown } | undefined)?.checkpoint_id;
    if (body.checkpoint !== undefined || body.checkpoint_id !== undefined) {
      const latest = checkpointIdOf(existing ? (await visibleMessages(context, userId, existing.id)).length : 0);
      if (checkpointId !== latest) throw new VigilError('UNSUPPORTED_OPTION', `a run starts from the thread's latest state (${latest}); branching from an earlier checkpoint is not supported (history is never rewritten, I14)`);
    }
    const strategy = body.multitask_strategy ?? 'reject';
    // In flight here, or running on any instance (its run record says so).
    const elsewhere = existing ? await liveRunningRunOf(context, userId, existing.id) : undefined;
    const busy = existing !== undefined && (runs.isBusy(existing.id) || elsewhere !== undefined);
    if (busy && decisions) throw new VigilError('THREAD_BUSY', `a run is in progress on thread "${threadId}"; resume once it waits for your decision`);
    if (busy && strategy === 'reject') throw new VigilError('THREAD_BUSY', `a run is in progress on thread "${threadId}" (multitask_strategy "reject"; "enqueue" waits for it, "interrupt" cancels it)`);
    // threadId is set: a stateless run with decisions was refused above.
    const decide = decisions ? await decider(userId, threadId!, decisions) : undefined;
    // Resolved once nothing above can refuse the run: `agent` makes the default agent on first use.
    const agent = await resolveAssistant(context, userId, body.assistant_id);

    // A thread this run makes is made with its metadata and the run's row, in one
    // transaction: should either fail, no thread is left (I11).
    let recorded: ProtocolRunRecord | undefined;
    const alsoWithin: AlsoWithinThread = async (within, made) => {
      await store.setThreadMetadata(userId, made.id, {}, new Date().toISOString(), { within });
      const row = newRunRecord({ runId: randomUUID(), userId, threadId: made.id, agentId: agent.id, metadata, multitaskStrategy: strategy, owner: runs.owner });
      await store.createRun(row, { within });
      recorded = row;
    };
    let thread: ThreadRecord;
    if (threadId === null) {
      thread = await deps.conversations.createThread(userId, { agentId: agent.id, alsoWithin: decisions ? undefined : alsoWithin });
    } else {
      const made =
        existing ??
        (await deps.conversations.createThread(userId, { id: threadId, agentId: agent.id, alsoWithin: decisions ? undefined : alsoWithin }).catch(async (error: unknown) => {
          // Made meanwhile by another request of this user: this run goes on it, checked again as on any thread.
          if (!again && (await findThread(context, userId, threadId)) !== undefined) return undefined;
          // The id is taken by another user's thread: that one stays invisible (I12).
          throw new VigilError('THREAD_EXISTS', `a thread "${threadId}" cannot be created`, { cause: error });
        }));
      if (made === undefined) return startRun(request, body, threadId, true);
      thread = made;
      if (thread.agentId !== agent.id) {
        if (!(await store.rebindEmptyThread(userId, thread.id, agent.id, new Date().toISOString()))) {
          throw new VigilError('ASSISTANT_MISMATCH', `thread "${thread.id}" holds the conversation of assistant "${thread.agentId}"; start a new thread for "${agent.id}"`);
        }
        thread = await deps.conversations.getThread(userId, thread.id);
      }
    }
    if (busy && strategy === 'interrupt') {
      // Cancel what holds or waits for the thread, on any instance; its messages so far stay (I14).
      for (const other of runs.inFlightOn(thread.id)) await runs.cancel(userId, other.runId, CANCEL_REASONS.interrupted);
      const active = runs.activeRunOf(thread.id);
      for (const running of new Set([active, elsewhere])) if (running !== undefined) await runs.cancel(userId, running, CANCEL_REASONS.interrupted);
    }
    const run = decisions
      ? await runs.resume({ userId, thread, agent, metadata, multitaskStrategy: strategy, ...decide! })
      : await runs.start({ userId, thread, agent, content: content!, metadata, multitaskStrategy: strategy, correlationId: request.id, recorded });
    const stateless = threadId === null;
    if (stateless && body.on_completion !== 'keep') {
      // Its metadata goes with it, in the thread's deletion transaction.
      void run.settled.then(() => deps.conversations.deleteThread(userId, thread.id).catch(() => undefined));
    }
    return { run, thread, modes, stateless };
  }

  async function stream(request: FastifyRequest, reply: FastifyReply, body: RunBody, threadId: string | null) {
    const { run, thread, modes } = await startRun(request, body, threadId);
    const onDisconnect = body.on_disconnect === 'cancel' ? () => void runs.cancel(request.userId, run.runId, CANCEL_REASONS.disconnected) : undefined;
    await writeFrames(request, reply, run.frames, { target: { threadId: thread.id, runId: run.runId }, modes, after: -1, heartbeatMs, ...(onDisconnect ? { onDisconnect } : {}) });
  }

  async function wait(request: FastifyRequest, reply: FastifyReply, body: RunBody, threadId: string | null) {
    const { run, thread, stateless } = await startRun(request, body, threadId);
    const outcome = await run.settled;
    const path = `/threads/${thread.id}/runs/${run.runId}`;
    void reply.header('content-location', path);
    // A stateless run's thread goes when it ends: read its values first.
    const values = stateless && outcome ? { messages: outcome.messages.filter((message) => message.visibility === 'user').map(toMessageDict) } : await finalValues(request.userId, thread.id);
    const failure = failureOf(run, outcome);
    return failure ? { ...values, __error__: failure } : values;
  }

  async function create(request: FastifyRequest, reply: FastifyReply, body: RunBody, threadId: string | null) {
    const { run, thread } = await startRun(request, body, threadId);
    void reply.header('content-location', `/threads/${thread.id}/runs/${run.runId}`);
    return toRun(undefined, await store.getRun(request.userId, run.runId));
  }

  const runResponse = { 200: anyObject, 404: errorBody, 409: errorBody, 422: errorBody };
  return async (app) => {
    app.post('/threads/:thread_id/runs', { schema: { tags: ['langgraph'], params: threadIdParams, body: runBody, response: runResponse } }, async (request, reply) => create(request, reply, request.body, request.params.thread_id));
    app.post('/threads/:thread_id/runs/stream', { schema: { tags: ['langgraph'], params: threadIdParams, querystring: streamNamespaceQuery, body: runBody, response: runResponse } }, async (request, reply) =>
      stream(request, reply, request.body, request.params.thread_id),
    );
    app.post('/threads/:thread_id/runs/wait', { schema: { tags: ['langgraph'], params: threadIdParams, body: runBody, response: runResponse } }, async (request, reply) => wait(request, reply, request.body, request.params.thread_id));
    app.post('/runs', { schema: { tags: ['langgraph'], body: runBody, response: { 200: anyObject, 404: errorBody, 422: errorBody } } }, async (request, reply) => create(request, reply, request.body, null));
    app.post('/runs/stream', { schema: { tags: ['langgraph'], querystring: streamNamespaceQuery, body: runBody, response: { 200: anyObject, 404: errorBody, 422: errorBody } } }, async (request, reply) => stream(request, reply, request.body, null));
    app.post('/runs/wait', { schema: { tags: ['langgraph'], body: runBody, response: { 200: anyObject, 404: errorBody, 422: errorBody } } }, async (request, reply) => wait(request, reply, request.body, null));

    app.get('/threads/:thread_id/runs', { schema: { tags: ['langgraph'], params: threadIdParams, querystring: listRunsQuery, response: { 200: z.array(anyObject), 404: errorBody } } }, async (request) => {
      const { userId, query } = request;
      const threadId = request.params.thread_id;
      await deps.conversations.getThread(userId, threadId);
      const window = query.offset + query.limit;
      const rows = await Promise.all((await store.listRuns(userId, threadId, { limit: window, offset: 0 })).map((row) => runs.reconcile(row)));
      // As many of vigil's runs as the page reaches: a protocol row whose run is not among them would show `pending`.
      const vigilRuns = await deps.conversations.listRuns(userId, threadId, window);
      // A protocol row names the vigil run it is (or follows, for a resume).
      const byId = new Map(rows.map((row) => [row.vigilRunId ?? row.runId, row]));
      // vigil's own runs (follow-ups, schedules, webhooks) are the thread's runs too, with metadata.vigil.trigger.
      const listed: Json[] = vigilRuns.map((run) => {
        const row = byId.get(run.id);
        return { ...toRun(run, row), run_id: row?.runId ?? run.id };
      });
      const seen = new Set(vigilRuns.map((run) => run.id));
      for (const row of rows) if (!seen.has(row.vigilRunId ?? row.runId)) listed.push(toRun(undefined, row));
      listed.sort((a, b) => (String(a.created_at) < String(b.created_at) ? 1 : String(a.created_at) > String(b.created_at) ? -1 : 0));
      return selectFields(listed.filter((run) => !query.status || run.status === query.status).slice(query.offset, window), query.select);
    });

    app.get('/threads/:thread_id/runs/:run_id', { schema: { tags: ['langgraph'], params: threadRunParams, response: { 200: anyObject, 404: errorBody } } }, async (request) =>
      runDto(request.userId, request.params.thread_id, request.params.run_id),
    );

    app.post('/threads/:thread_id/runs/:run_id/cancel', { schema: { tags: ['langgraph'], params: threadRunParams, querystring: cancelRunQuery, response: { 200: anyObject, 202: z.null(), 404: errorBody, 409: errorBody, 422: errorBody } } }, async (request, reply) => {
      const { userId, params, query } = request;
      const before = await runDto(userId, params.thread_id, params.run_id);
      if (query.action === 'rollback') throw new VigilError('UNSUPPORTED_OPTION', 'cancel action "rollback" is not supported: vigil never deletes messages (I14)');
      if ((await runs.cancel(userId, params.run_id)) === 'not_cancellable') {
        throw new VigilError('RUN_NOT_CANCELLABLE', 'this run carries out decisions on tool calls that are recorded, and a decision is final (I16): the run that carries them out starts anyway, so nothing was cancelled; once that run is running (this run shows `running`), a cancel stops it');
      }
      if (query.wait === '1' || query.wait === 'true') {
        if (!(await runs.settle(params.run_id))) await endOf(await followed(userId, params.thread_id, params.run_id, before));
        return runDto(userId, params.thread_id, params.run_id);
      }
      return reply.status(202).send(null);
    });

    app.get('/threads/:thread_id/runs/:run_id/join', { schema: { tags: ['langgraph'], params: threadRunParams, querystring: joinQuery, response: { 200: anyObject, 404: errorBody } } }, async (request) => {
      const { userId, params } = request;
      const run = await runDto(userId, params.thread_id, params.run_id);
      // Another instance runs it: wait for its end to come through the event bus.
      if (!(await runs.settle(params.run_id))) await endOf(await followed(userId, params.thread_id, params.run_id, run));
      return finalValues(userId, params.thread_id);
    });

    app.get('/threads/:thread_id/runs/:run_id/stream', { schema: { tags: ['langgraph'], params: threadRunParams, querystring: joinStreamQuery, response: { 200: anyObject, 400: errorBody, 404: errorBody, 422: errorBody } } }, async (request, reply) => {
      const { userId, params, query } = request;
      const run = await runDto(userId, params.thread_id, params.run_id);
      if (query.checkpoint_id !== undefined) throw new VigilError('UNSUPPORTED_OPTION', 'joining a stream from a checkpoint is not supported');
      const modes = query.stream_mode === undefined ? new Set<StreamMode>(SUPPORTED_MODES) : modesOf(query.stream_mode);
      const after = lastEventIdOf(request) ?? -1;
      const cancelOnDisconnect = query.cancel_on_disconnect === '1' || query.cancel_on_disconnect === 'true';
      let frames = runs.framesOf(params.run_id) ?? (await followed(userId, params.thread_id, params.run_id, run)) ?? (await replayed(userId, params.thread_id, params.run_id));
      if (!frames && !['pending', 'running'].includes(String(run.status))) {
        // A run that ended so long ago that its events left the window: its outcome. Numbered
        // after what a resuming client read, or it would be sent nothing at all.
        frames = new RunFrames(after + 1);
        frames.push('metadata', { run_id: params.run_id, thread_id: params.thread_id, attempt: 1 });
        frames.push('values', await finalValues(userId, params.thread_id));
        // One that never started says why, as its stream said (the server that had it stopped, …).
        const ended = ((run.metadata as Json | undefined)?.vigil as Json | undefined)?.error as { code?: unknown; message?: unknown } | null | undefined;
        if (run.status === 'error' && typeof ended?.code === 'string') frames.push('error', { error: ended.code, message: String(ended.message ?? '') });
        frames.close();
      }
      await writeFrames(request, reply, frames, {
        target: { threadId: params.thread_id, runId: params.run_id },
        modes,
        after,
        heartbeatMs,
        ...(cancelOnDisconnect ? { onDisconnect: () => void runs.cancel(userId, params.run_id, CANCEL_REASONS.disconnected) } : {}),
      });
    });
  };
}
