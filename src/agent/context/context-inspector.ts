import type { BaseMessage } from '@langchain/core/messages';
import type { AgentKind } from '../../app/ports.js';
import type { ThreadContextReader } from '../../app/context/thread-context-service.js';
import type { SummaryCoverage } from '../../domain/context/conversation-summary.js';
import type { RegisteredGraph } from '../agent-graph.js';
import { prepareChatCall, recalledInput, type ChatCallDependencies } from '../chat-graph.js';
import { recallForTurn, type MemoryRecallDependencies } from '../memory-recall.js';
import { runConfig, runSettingsOf } from '../run-settings.js';
import type { ContextWindow } from './context-window.js';

/** A fixed, visibly fake nonce: the API shows the shape of the next call, never a real run's nonce. */
const NEXT_RUN_NONCE = 'next-run';

/**
 * What the next model call of a thread would receive, as GET /api/threads/{id}/context
 * shows it: read from the thread's checkpoint, fitted exactly like a call (nothing is
 * folded or written here). Computed for a person's next message, which shows no envelope.
 * A chat agent's memories are recalled as its call recalls them (the same function, the
 * query chosen from the thread as it stands: the last real user message, else the summary)
 * and fitted by the same preparation; recalling only reads.
 */
export function threadContextReader(
  context: ContextWindow,
  graphs: Partial<Record<AgentKind, Pick<RegisteredGraph, 'graph'>>>,
  defaultModel: string,
  chat: Omit<ChatCallDependencies, 'context'> & MemoryRecallDependencies,
): ThreadContextReader {
  return async ({ agent, userId, threadId }) => {
    const settings = { runId: 'next', threadId, userId, agentId: agent.id, trigger: 'user' as const, model: agent.model ?? defaultModel, systemPrompt: agent.systemPrompt, nonce: NEXT_RUN_NONCE };
    const config = runConfig(settings);
    const registered = graphs[agent.kind];
    const values = registered ? ((await registered.graph.getState(config)).values as Partial<StateValues> | undefined) : undefined;
    const all = Array.isArray(values?.messages) ? values.messages : [];
    // Planner agents show the model only the conversation (their complete node filters the same way).
    const messages = agent.kind === 'planner' ? all.filter((message) => message.getType() === 'human' || message.getType() === 'ai') : all;
    const state = { messages, summary: values?.summary ?? null, summaryCoverage: values?.summaryCoverage ?? null };
    // A chat agent's call is prepared by the very function its graph uses (its tools counted, dangling tool calls closed).
    const run = runSettingsOf(config);
    if (agent.kind !== 'chat') return (await context.prepare(state, run, config, { fold: false })).report;
    const recall = await recallForTurn(chat, state, run);
    return (await prepareChatCall({ ...chat, context }, state, run, config, { ...recalledInput(recall), fold: false })).input.report;
  };
}

interface StateValues {
  messages: BaseMessage[];
  summary: string | null;
  summaryCoverage: SummaryCoverage | null;
}
