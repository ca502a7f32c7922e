import type { BaseMessage } from '@langchain/core/messages';
import type { RunnableConfig } from '@langchain/core/runnables';
import type { RegisteredGraph } from '../../agent/agent-graph.js';
import { VigilError } from '../../domain/errors.js';

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

export interface AttemptOptions {
  /** The run's signal: cancelling the run ends the attempt. */
  signal: AbortSignal;
  /**
   * The longest silence inside a model's stream once it has begun. The HTTP clients'
   * own timeout ends only at the response headers: a server that stalls halfway through
   * its stream would otherwise hold the run (and the thread's lock) forever. Tool calls
   * and other steps between model calls are not timed by this.
   */
  stallTimeoutMs?: number | undefined;
}

/** One attempt: drive the graph once, from `input` (null resumes the checkpoint), until it ends or throws. */
export async function streamAttempt(registered: RegisteredGraph, input: Record<string, unknown> | null, config: RunnableConfig, sink: AttemptSink, options: AttemptOptions): Promise<void> {
  const attempt = new AbortController();
  const forward = () => attempt.abort(options.signal.reason);
  if (options.signal.aborted) forward();
  else options.signal.addEventListener('abort', forward, { once: true });
  let stall: NodeJS.Timeout | undefined;
  let stalled: VigilError | undefined;
  const watch = () => {
    if (options.stallTimeoutMs === undefined) return;
    clearTimeout(stall);
    stall = setTimeout(() => {
      stalled = new VigilError('MODEL_TIMEOUT', `the model's stream stalled for more than ${options.stallTimeoutMs} ms`);
      attempt.abort(stalled);
    }, options.stallTimeoutMs);
  };
  try {
    // durability 'sync': a step's state is streamed only once its checkpoint is written.
    // With LangGraph's default ('async') the projection could be written before the
    // checkpoint it mirrors; a crash between the two left history ahead of the checkpoint,
    // and the count-based projection then skipped the thread's next message (the
    // crash-safety e2e test lost an accepted webhook delivery so).
    const stream = await registered.graph.stream(input, { ...config, signal: attempt.signal, streamMode: [...RUN_STREAM_MODES], durability: 'sync' });
    for await (const [mode, chunk] of stream as AsyncIterable<[string, unknown]>) {
      if (mode === 'values') {
        clearTimeout(stall); // the step ended: no model is streaming now
        await sink.onValues(chunk);
      } else if (mode === 'messages') {
        watch();
        const [message, metadata] = chunk as [BaseMessage, Record<string, unknown>];
        // Tokens of a model call only (a chat model's callbacks carry ls_model_type). LangGraph
        // also emits whole messages it finds in a node's output or a state read (a conditional
        // edge reads the state after the reducer gave the reply vigil's id, so it looks
        // unseen): those are no deltas, and message.end carries them.
        if (registered.replyNodes.has(String(metadata?.langgraph_node)) && metadata?.ls_model_type !== undefined) sink.onReplyChunk(message, metadata ?? {});
      }
    }
  } catch (error) {
    throw stalled ?? error;
  } finally {
    clearTimeout(stall);
    options.signal.removeEventListener('abort', forward);
  }
}

export function messagesOf(values: unknown): BaseMessage[] {
  const messages = (values as { messages?: unknown } | null)?.messages;
  return Array.isArray(messages) ? (messages as BaseMessage[]) : [];
}
