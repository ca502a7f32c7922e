import type { RunnableConfig } from '@langchain/core/runnables';

/**
 * What the run coordinator needs of a compiled LangGraph graph, whatever its state:
 * every agent kind's graph keeps a `messages` channel and is driven the same way.
 */
export interface AgentGraph {
  /** `null` resumes the thread from its last checkpoint (an interrupted turn is finished). */
  stream(
    input: Record<string, unknown> | null,
    options: RunnableConfig & { streamMode: ('messages' | 'values' | 'custom')[]; durability?: 'sync' | 'async' | 'exit' },
  ): Promise<AsyncIterable<unknown>>;
  /**
   * `tasks[].interrupts`: what the thread waits for when a node called interrupt() (I16);
   * `next`: the nodes still to run (none once a turn reached its end).
   */
  getState(config: RunnableConfig): Promise<{ values: unknown; next?: readonly string[]; tasks?: ReadonlyArray<{ interrupts?: readonly unknown[] }> }>;
}

export interface RegisteredGraph {
  graph: AgentGraph;
  /** Nodes whose model tokens are the agent's reply to a person (streamed as message.delta). */
  replyNodes: ReadonlySet<string>;
  /**
   * Why a run that ended normally stopped early (a planner bound, I9), read from the
   * graph's final state for the run record and `run.end`; null when it simply finished.
   */
  endReason?: (values: unknown) => string | null;
}
