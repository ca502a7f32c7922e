import type { AgentRecord, RunRecord, StoredMessage, ThreadRecord } from '../../app/ports.js';
import { VigilError, isVigilError } from '../../domain/errors.js';
import { DEFAULT_AGENT_ALIASES, DEFAULT_AGENT_ID } from '../../app/agent-service.js';
import type { HttpDependencies } from '../http-dependencies.js';
import type { ProtocolStore, ThreadStatusFacts } from '../../app/langgraph/protocol-store.js';
import { threadMetadata, toInterrupt, toThread, type ThreadStatus } from './convert.js';
import type { ApprovalRecord } from '../../domain/tools/approval.js';
import { toMessageDict } from './convert.js';

type Json = Record<string, unknown>;

/** What the protocol routes share: the services, the protocol store, and the runs in flight. */
export interface ProtocolContext {
  deps: HttpDependencies;
  store: ProtocolStore;
  /** Threads with a protocol run in flight (waiting for the thread or running) in this process. */
  busyThreads: () => ReadonlySet<string>;
}

/** The user's agent for an assistant id; `chat`/`agent` name the default chat agent. */
export async function resolveAssistant(context: ProtocolContext, userId: string, assistantId: string): Promise<AgentRecord> {
  try {
    return await context.deps.agents.get(userId, assistantId);
  } catch (error) {
    if (isVigilError(error) && error.code === 'AGENT_NOT_FOUND' && DEFAULT_AGENT_ALIASES.has(assistantId)) return context.deps.agents.getOrCreateDefault(userId);
    throw error;
  }
}

/** The user's agent for an assistant id, without making the default one: undefined when there is none. */
export async function findAssistant(context: ProtocolContext, userId: string, assistantId: string): Promise<AgentRecord | undefined> {
  const find = (agentId: string) =>
    context.deps.agents.get(userId, agentId).catch((error: unknown) => {
      if (isVigilError(error) && error.code === 'AGENT_NOT_FOUND') return undefined;
      throw error;
    });
  return (await find(assistantId)) ?? (DEFAULT_AGENT_ALIASES.has(assistantId) ? find(DEFAULT_AGENT_ID) : undefined);
}

/** The user's thread, or undefined when there is none (another user's id included, I12). */
export function findThread(context: ProtocolContext, userId: string, threadId: string): Promise<ThreadRecord | undefined> {
  return context.deps.conversations.findThread(userId, threadId);
}

/** Every message a person sees on the thread (I2), oldest first. */
export async function visibleMessages(context: ProtocolContext, userId: string, threadId: string): Promise<StoredMessage[]> {
  const pages: StoredMessage[][] = [];
  let cursor: string | undefined;
  do {
    const page = await context.deps.conversations.history(userId, threadId, { includeInternal: false, limit: 200, cursor });
    pages.unshift(page.messages);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return pages.flat();
}

/**
 * The thread's run in progress on any instance, for a run about to start: one whose process
 * died (nothing holds its thread) is ended now, as the sweep would, instead of refusing
 * runs as busy until the sweep comes by.
 */
export async function liveRunningRunOf(context: ProtocolContext, userId: string, threadId: string): Promise<string | undefined> {
  const running = await runningRecordOf(context, userId, threadId);
  if (running === undefined) return undefined;
  const ended = context.busyThreads().has(threadId) ? false : await context.deps.langgraph?.endOrphanedRun?.(running);
  return ended === true ? undefined : running.id;
}

async function runningRecordOf(context: ProtocolContext, userId: string, threadId: string): Promise<RunRecord | undefined> {
  const [newest] = await context.deps.conversations.listRuns(userId, threadId, 1);
  return newest?.status === 'running' ? newest : undefined;
}

/**
 * A thread's status, as LangGraph Platform reports it: `busy` while a run is in progress,
 * `interrupted` while tool calls wait for a person (I16: waiting is never shown as anything
 * else), `error` when its last run failed, else `idle`. The last run is the newest of the
 * thread's runs of any kind (a follow-up's, a schedule's too), or a protocol run newer than
 * it that failed before it started (it has no run record: a resume whose run never came); a
 * cancelled run is no failure (LangGraph's interrupted run leaves its thread idle).
 */
export async function threadStatus(context: ProtocolContext, thread: Pick<ThreadRecord, 'id' | 'userId'>): Promise<ThreadStatus> {
  return (await threadStatuses(context, thread.userId, [thread.id])).get(thread.id) ?? 'idle';
}

/** The status of each of these threads of the user (see threadStatus), read in one query. */
export async function threadStatuses(context: ProtocolContext, userId: string, threadIds: readonly string[]): Promise<Map<string, ThreadStatus>> {
  const facts = await context.store.statusFactsOf(userId, threadIds);
  // A run of any kind in this process: the protocol's, /api's, or the agent's own (a follow-up, a schedule).
  const runningHere = (threadId: string) => context.busyThreads().has(threadId) || context.deps.langgraph?.activeRunOf(threadId) !== undefined;
  return new Map(threadIds.map((threadId) => [threadId, statusOf(runningHere(threadId), facts.get(threadId))]));
}

function statusOf(runningHere: boolean, facts: ThreadStatusFacts | undefined): ThreadStatus {
  const newest = facts?.newestRun ?? null;
  // Running on any instance (its run record says so).
  if (runningHere || newest?.status === 'running') return 'busy';
  if (facts?.waitingForDecision === true) return 'interrupted';
  if (newest?.status === 'failed') return 'error';
  const row = facts?.newestProtocolRun ?? null;
  const failedBeforeStart = row?.state === 'failed' && row.vigilRunId === null && (newest === null || row.createdAt > newest.requestedAt);
  return failedBeforeStart ? 'error' : 'idle';
}

export async function kindOf(context: ProtocolContext, thread: ThreadRecord): Promise<string | undefined> {
  try {
    return (await context.deps.agents.get(thread.userId, thread.agentId)).kind;
  } catch {
    return undefined;
  }
}

/** The thread's tool calls waiting for a decision, oldest first. */
export async function pendingApprovals(context: ProtocolContext, userId: string, threadId: string): Promise<ApprovalRecord[]> {
  if (!context.deps.approvals) return [];
  return (await context.deps.approvals.list(userId, { limit: 100, status: 'pending', threadId })).reverse();
}

/** The thread's interrupts: one per model step whose tool calls wait for a person. */
export async function interruptsOf(context: ProtocolContext, userId: string, threadId: string): Promise<Json[]> {
  const steps = new Map<string, ApprovalRecord[]>();
  for (const approval of await pendingApprovals(context, userId, threadId)) steps.set(approval.messageId, [...(steps.get(approval.messageId) ?? []), approval]);
  return [...steps.values()].map(toInterrupt);
}

/** A thread's values: its visible messages (I2), and `__interrupt__` while tool calls wait for a person. */
export async function valuesOf(context: ProtocolContext, userId: string, threadId: string, interrupts?: Json[]): Promise<Json> {
  const messages = await visibleMessages(context, userId, threadId);
  const waiting = interrupts ?? (await interruptsOf(context, userId, threadId));
  return { messages: messages.map(toMessageDict), ...(waiting.length > 0 ? { __interrupt__: waiting } : {}) };
}

/** A thread as the protocol shows it, with its values and interrupts. */
export async function describeThread(context: ProtocolContext, thread: ThreadRecord, stored?: Json): Promise<Json> {
  const metadata = threadMetadata(thread, stored ?? (await context.store.threadMetadata(thread.userId, thread.id)), await kindOf(context, thread));
  const interrupts = await interruptsOf(context, thread.userId, thread.id);
  const values = await valuesOf(context, thread.userId, thread.id, interrupts);
  return toThread(thread, metadata, await threadStatus(context, thread), values, Object.fromEntries(interrupts.map((interrupt) => [interrupt.id as string, [interrupt]])));
}

/** `metadata.vigil` is vigil's own extension: a client cannot write it. */
export function clientMetadata(metadata: Json | undefined): Json {
  if (!metadata) return {};
  if ('vigil' in metadata) throw new VigilError('VALIDATION_FAILED', 'metadata.vigil is reserved for what vigil reports');
  const { assistant_id: _assistant, graph_id: _graph, ...rest } = metadata;
  return rest;
}

/**
 * Does `metadata` contain `filter`, as LangGraph Platform's metadata filters match
 * (PostgreSQL's jsonb `@>`)? An object contains another when it has each of its keys with a
 * value that contains that key's value, whatever the order of the keys and whatever else it
 * holds (`{ vigil: { agent_id } }` finds a thread of that agent); an array contains another
 * when each of its items is contained in some item; a scalar contains only an equal one.
 */
export function containsMetadata(metadata: Json, filter: Json): boolean {
  return jsonContains(metadata, filter);
}

function jsonContains(value: unknown, filter: unknown): boolean {
  if (Array.isArray(filter)) return Array.isArray(value) && filter.every((wanted) => value.some((item) => jsonContains(item, wanted)));
  if (isJsonObject(filter)) return isJsonObject(value) && Object.entries(filter).every(([key, wanted]) => Object.hasOwn(value, key) && jsonContains(value[key], wanted));
  return !Array.isArray(value) && !isJsonObject(value) && value === filter;
}

function isJsonObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `select`: only these fields of each item (the SDK's search and list option). */
export function selectFields(items: Json[], select: string | readonly string[] | undefined): Json[] {
  if (select === undefined) return items;
  const fields = typeof select === 'string' ? [select] : select;
  return items.map((item) => Object.fromEntries(fields.filter((field) => field in item).map((field) => [field, item[field]])));
}
