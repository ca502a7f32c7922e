import type { BaseMessage } from '@langchain/core/messages';
import type { RunnableConfig } from '@langchain/core/runnables';
import type { RegisteredGraph } from '../../agent/agent-graph.js';

/**
 * The stream modes a run asks the graph for, and what is done with each. A new mode (e.g.
 * `custom` progress, interrupts) is one more entry here and one more handler in
 * `AttemptSink`.
 */
export const RUN_STREAM_MODES = ['messages', 'values'] as const;

export interface AttemptSink {
  /** The graph's full state after a step. */
  onValues(values: unknown): Promise<void>;
  /** A token chunk of a model call in a reply node, with LangGraph's metadata of the call (node, step, namespace). */
  onReplyChunk(message: BaseMessage, metadata: Record<string, unknown>): void;
}

/** One attempt: drive the graph once, from `input` (null resumes the checkpoint), until it ends or throws. */
export async function streamAttempt(registered: RegisteredGraph, input: Record<string, unknown> | null, config: RunnableConfig, sink: AttemptSink): Promise<void> {
  const stream = await registered.graph.stream(input, { ...config, streamMode: [...RUN_STREAM_MODES] });
  for await (const [mode, chunk] of stream as AsyncIterable<[string, unknown]>) {
    if (mode === 'values') await sink.onValues(chunk);
    else if (mode === 'messages') {
      const [message, metadata] = chunk as [BaseMessage, Record<string, unknown>];
      if (registered.replyNodes.has(String(metadata?.langgraph_node))) sink.onReplyChunk(message, metadata ?? {});
    }
  }
}

export function messagesOf(values: unknown): BaseMessage[] {
  const messages = (values as { messages?: unknown } | null)?.messages;
  return Array.isArray(messages) ? (messages as BaseMessage[]) : [];
}
