import type { RunnableConfig } from '@langchain/core/runnables';

/**
 * What the run coordinator needs of a compiled LangGraph graph, whatever its state:
 * every agent kind's graph keeps a `messages` channel and is driven the same way.
 */
export interface AgentGraph {
  stream(input: Record<string, unknown>, options: RunnableConfig & { streamMode: ('messages' | 'values' | 'custom')[] }): Promise<AsyncIterable<unknown>>;
  getState(config: RunnableConfig): Promise<{ values: unknown }>;
}

export interface RegisteredGraph {
  graph: AgentGraph;
  /** Nodes whose model tokens are the agent's reply to a person (streamed as message.delta). */
  replyNodes: ReadonlySet<string>;
}
