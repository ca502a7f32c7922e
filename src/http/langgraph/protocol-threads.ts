import type { AgentRecord, StoredMessage, ThreadRecord } from '../../app/ports.js';
import { VigilError, isVigilError } from '../../domain/errors.js';
import type { HttpDependencies } from '../http-dependencies.js';
import type { ProtocolStore } from '../../app/langgraph/protocol-store.js';
import { DEFAULT_GRAPH_ALIASES, threadMetadata, toThread, type ThreadStatus } from './convert.js';
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
    if (isVigilError(error) && error.code === 'AGENT_NOT_FOUND' && DEFAULT_GRAPH_ALIASES.has(assistantId)) return context.deps.agents.getOrCreateDefault(userId);
    throw error;
  }
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

export async function threadStatus(context: ProtocolContext, threadId: string): Promise<ThreadStatus> {
  if (context.busyThreads().has(threadId)) return 'busy';
  if (context.deps.approvals && (await context.deps.approvals.hasPending(threadId))) return 'interrupted';
  return 'idle';
}

export async function kindOf(context: ProtocolContext, thread: ThreadRecord): Promise<string | undefined> {
  try {
    return (await context.deps.agents.get(thread.userId, thread.agentId)).kind;
  } catch {
    return undefined;
  }
}

/** A thread as the protocol shows it, with its values (visible messages only). */
export async function describeThread(context: ProtocolContext, thread: ThreadRecord, stored?: Json): Promise<Json> {
  const metadata = threadMetadata(thread, stored ?? (await context.store.threadMetadata(thread.userId, thread.id)), await kindOf(context, thread));
  const messages = await visibleMessages(context, thread.userId, thread.id);
  return toThread(thread, metadata, await threadStatus(context, thread.id), { messages: messages.map(toMessageDict) });
}

/** `metadata.vigil` is vigil's own extension: a client cannot write it. */
export function clientMetadata(metadata: Json | undefined): Json {
  if (!metadata) return {};
  if ('vigil' in metadata) throw new VigilError('VALIDATION_FAILED', 'metadata.vigil is reserved for what vigil reports');
  const { assistant_id: _assistant, graph_id: _graph, ...rest } = metadata;
  return rest;
}

/** Does `metadata` contain every key of `filter` with an equal (JSON) value? */
export function containsMetadata(metadata: Json, filter: Json): boolean {
  return Object.entries(filter).every(([key, value]) => JSON.stringify(metadata[key]) === JSON.stringify(value));
}
