import type { RegisteredGraph } from '../../agent/agent-graph.js';
import { runConfig } from '../../agent/run-settings.js';
import type { RunContext } from '../../domain/run-context.js';
import type { AgentKind, AgentRecord } from '../ports.js';
import { messagesOf } from '../runs/stream-attempt.js';

/**
 * The id of the model message whose tool step a thread's checkpoint waits on (a node
 * called interrupt()), or null when the thread waits for nothing.
 */
export function waitingStepReader(graphs: Partial<Record<AgentKind, RegisteredGraph>>, defaultModel: string) {
  return async (agent: AgentRecord, context: RunContext): Promise<string | null> => {
    const registered = graphs[agent.kind];
    if (!registered) return null;
    const settings = { runId: context.runId, threadId: context.threadId, userId: context.userId, agentId: context.agentId, trigger: context.trigger, systemPrompt: '', model: agent.model ?? defaultModel };
    const state = await registered.graph.getState(runConfig(settings));
    if (!(state.tasks ?? []).some((task) => (task.interrupts?.length ?? 0) > 0)) return null;
    return messagesOf(state.values).at(-1)?.id ?? null;
  };
}
