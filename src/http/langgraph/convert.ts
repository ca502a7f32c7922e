import { publicMetadataOf } from '../../app/run-coordinator.js';
import type { AgentRecord, RunRecord, StoredMessage, ThreadRecord } from '../../app/ports.js';
import type { ProtocolRunRecord } from '../../app/langgraph/protocol-store.js';
import { storedToolCallViews } from '../../domain/tools/tool-call-view.js';
import type { ApprovalRecord } from '../../domain/tools/approval.js';

type Json = Record<string, unknown>;

/** The graph ids vigil serves: an assistant's graph is its agent's kind. As assistant ids, `agent` and `chat` name the default agent (DEFAULT_AGENT_ALIASES). */
export const GRAPH_IDS = ['chat', 'planner'] as const;

/** A stored message as a LangChain message dict, the shape LangGraph's API returns in `values`. */
export function toMessageDict(message: StoredMessage): Json {
  const dict: Json = {
    type: message.type,
    id: message.id,
    content: message.content,
    additional_kwargs: {},
    response_metadata: publicMetadataOf(message),
  };
  if (message.type === 'ai') {
    dict.tool_calls = storedToolCallViews(message.additionalKwargs.tool_calls).map((call) => ({ id: call.id, name: call.name, args: call.arguments ?? {}, type: 'tool_call' }));
    dict.invalid_tool_calls = [];
  }
  return dict;
}

/** An assistant is a vigil agent; what the protocol adds (description, metadata) lives in the agent's `langgraph` setting. */
export function toAssistant(agent: AgentRecord): Json {
  const extra = (agent.settings.langgraph ?? {}) as { description?: string | null; metadata?: Json };
  return {
    assistant_id: agent.id,
    graph_id: agent.kind,
    name: agent.name,
    description: extra.description ?? null,
    config: {},
    context: { system_prompt: agent.systemPrompt, model: agent.model },
    metadata: { ...(extra.metadata ?? {}), vigil: { agent_id: agent.id, kind: agent.kind } },
    version: 1,
    created_at: agent.createdAt,
    updated_at: agent.updatedAt,
  };
}

export type ThreadStatus = 'idle' | 'busy' | 'interrupted' | 'error';

/** The metadata a thread shows: the client's own, the assistant it runs, and vigil's extension under `vigil`. */
export function threadMetadata(thread: ThreadRecord, stored: Json, kind: string | undefined): Json {
  return {
    ...stored,
    assistant_id: thread.agentId,
    ...(kind ? { graph_id: kind } : {}),
    vigil: { agent_id: thread.agentId, title: thread.title, message_count: thread.visibleCount, last_user_activity_at: thread.lastUserActivityAt },
  };
}

export function toThread(thread: ThreadRecord, metadata: Json, status: ThreadStatus, values: Json, interrupts: Json = {}): Json {
  return { thread_id: thread.id, created_at: thread.createdAt, updated_at: thread.updatedAt, metadata, status, values, interrupts };
}

/** A thread's state after its first `count` visible messages; `checkpoint_id` names that point (vigil addresses state by thread, not by checkpoint). */
export function toState(thread: ThreadRecord, messages: readonly StoredMessage[], count: number, extra: { interrupts?: Json[]; tasks?: Json[]; next?: string[] } = {}): Json {
  const included = messages.slice(0, count);
  const checkpoint = (index: number) => ({ thread_id: thread.id, checkpoint_ns: '', checkpoint_id: checkpointIdOf(index), checkpoint_map: null });
  const last = included[included.length - 1];
  return {
    values: { messages: included.map(toMessageDict) },
    next: extra.next ?? [],
    tasks: extra.tasks ?? [],
    checkpoint: checkpoint(count),
    parent_checkpoint: count > 0 ? checkpoint(count - 1) : null,
    metadata: { source: count === 0 ? 'input' : 'loop', step: count - 1, thread_id: thread.id, ...(last?.runId ? { run_id: last.runId } : {}) },
    created_at: last?.createdAt ?? thread.createdAt,
    interrupts: extra.interrupts ?? [],
  };
}

export function checkpointIdOf(count: number): string {
  return `vigil-${count}`;
}

/** The count a checkpoint id names, in the one form `checkpointIdOf` writes (`vigil-07` names none). */
export function countOfCheckpointId(id: string): number | undefined {
  const match = /^vigil-(0|[1-9]\d*)$/.exec(id);
  return match ? Number(match[1]) : undefined;
}

export type ProtocolRunStatus = 'pending' | 'running' | 'error' | 'success' | 'timeout' | 'interrupted';

const STATUS_OF_VIGIL: Record<RunRecord['status'], ProtocolRunStatus> = {
  running: 'running',
  succeeded: 'success',
  failed: 'error',
  cancelled: 'interrupted',
  interrupted: 'interrupted',
};

/** A run as the protocol shows it: vigil's run when it started, its protocol row before (or both). */
export function toRun(run: RunRecord | undefined, row: ProtocolRunRecord | undefined): Json {
  const status: ProtocolRunStatus = run ? STATUS_OF_VIGIL[run.status] : row?.state === 'cancelled' ? 'interrupted' : row?.state === 'failed' ? 'error' : 'pending';
  const vigil = run
    ? { trigger: run.trigger, meta: run.meta, status: run.status, reason: run.reason, error: run.errorCode ? { code: run.errorCode, message: run.errorMessage } : null, model: run.model, correlation_id: run.correlationId }
    : { trigger: 'user', status: row?.state === 'cancelled' ? 'cancelled' : row?.state === 'failed' ? 'failed' : 'pending', ...(row?.error ? { error: row.error } : {}) };
  return {
    run_id: run?.id ?? row!.runId,
    thread_id: run?.threadId ?? row!.threadId,
    assistant_id: row?.assistantId ?? run!.agentId,
    created_at: row?.createdAt ?? run!.requestedAt,
    updated_at: run?.endedAt ?? run?.startedAt ?? row!.createdAt,
    status,
    metadata: { ...(row?.metadata ?? {}), vigil },
    multitask_strategy: row?.multitaskStrategy ?? 'reject',
    kwargs: {},
  };
}

/**
 * A step's tool calls waiting for a person (vigil's approvals, I16) as one LangGraph
 * interrupt in the human-in-the-loop shape (`action_requests`, `review_configs`) that
 * Agent Chat UI renders; it is resumed with `command.resume.decisions`, in this order.
 */
export function toInterrupt(approvals: readonly ApprovalRecord[]): Json {
  const tools = [...new Set(approvals.map((approval) => approval.tool))];
  return {
    id: approvals[0]!.messageId,
    value: {
      action_requests: approvals.map((approval) => ({ name: approval.tool, args: approval.arguments, description: `vigil asks before running ${approval.tool} (until ${approval.expiresAt}; silence is not consent)` })),
      review_configs: tools.map((tool) => ({ action_name: tool, allowed_decisions: ['approve', 'edit', 'reject'] })),
      vigil: { approvals: approvals.map((approval) => ({ id: approval.id, tool_call_id: approval.toolCallId, run_id: approval.runId, expires_at: approval.expiresAt, attended: approval.attended })) },
    },
    when: 'during',
    resumable: true,
    ns: ['agent'],
  };
}
