import type { RegisteredGraph } from '../../agent/agent-graph.js';
import { runConfig } from '../../agent/run-settings.js';
import type { RunContext } from '../../domain/run-context.js';
import type { AgentKind, AgentRecord } from '../ports.js';
import { messagesOf } from '../runs/stream-attempt.js';

/**
 * The key of the tool step a thread's checkpoint waits on (a node called interrupt()): the
 * step the interrupt names (a planner step), else the id of the model message that made
 * the calls (a chat step); null when the thread waits for nothing.
 */
export function waitingStepReader(graphs: Partial<Record<AgentKind, RegisteredGraph>>, defaultModel: string) {
  return async (agent: AgentRecord, context: RunContext): Promise<string | null> => {
    const registered = graphs[agent.kind];
    if (!registered) return null;
    const settings = { runId: context.runId, threadId: context.threadId, userId: context.userId, agentId: context.agentId, trigger: context.trigger, systemPrompt: '', model: agent.model ?? defaultModel };
    const state = await registered.graph.getState(runConfig(settings));
    const interrupts = (state.tasks ?? []).flatMap((task) => task.interrupts ?? []);
    if (interrupts.length === 0) return null;
    // A planner step names itself in the interrupt (it has no model message in the thread).
    for (const entry of interrupts) {
      const step = (entry as { value?: { step?: unknown } } | null)?.value?.step;
      if (typeof step === 'string') return step;
    }
    return messagesOf(state.values).at(-1)?.id ?? null;
  };
}
