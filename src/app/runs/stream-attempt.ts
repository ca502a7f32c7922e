import type { BaseMessage } from '@langchain/core/messages';
import type { RunnableConfig } from '@langchain/core/runnables';
import type { RegisteredGraph } from '../../agent/agent-graph.js';
import { withModelCallCallbacks } from '../../agent/model-call-config.js';
import { VigilError } from '../../domain/errors.js';
import { ReplyTokenHandler } from './reply-token-handler.js';

/**
 * The stream modes a run asks the graph for, and what is done with each. A new mode (e.g.
 * `custom` progress) is one more entry here and one more handler in `AttemptSink`. Model
 * tokens come from the models' callbacks (ReplyTokenHandler, given to model calls only), not the `messages` mode.
 */
export const RUN_STREAM_MODES = ['values'] as const;

export interface AttemptSink {
  /** The graph's full state after a step. */
  onValues(values: unknown): Promise<void>;
  /** A token chunk of a model call in a reply node, with the call's id (one per model call). */
  onReplyChunk(message: BaseMessage, callId: string): void;
}

/** How an attempt ended: whether a node stopped at interrupt() (the thread then waits for a person, I16). */
export interface AttemptEnd {
  interrupted: boolean;
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
export async function streamAttempt(registered: RegisteredGraph, input: Record<string, unknown> | null, config: RunnableConfig, sink: AttemptSink, options: AttemptOptions): Promise<AttemptEnd> {
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
  // Given to the model calls only (modelCallConfig): a graph-wide handler would cost every step's runnables.
  const tokens = new ReplyTokenHandler({ token: watch, replyChunk: (message, callId) => sink.onReplyChunk(message, callId) }, registered.replyNodes);
  let interrupted = false;
  try {
    // durability 'sync': a step's state is streamed only once its checkpoint (and the history
    // rows stored with it) is written, so nothing is announced that a crash could still lose.
    // With LangGraph's default ('async') a step's messages were announced before the checkpoint
    // that holds them was stored (the crash-safety e2e test lost an accepted webhook delivery so).
    const stream = await registered.graph.stream(input, { ...withModelCallCallbacks(config, [tokens]), signal: attempt.signal, streamMode: [...RUN_STREAM_MODES], durability: 'sync' });
    for await (const [, chunk] of stream as AsyncIterable<[string, unknown]>) {
      clearTimeout(stall); // the step ended: no model is streaming now
      // A node that called interrupt() is announced as `{ __interrupt__: [...] }` (LangGraph's
      // loop emits it for every interrupting task, resumed ones included).
      if (isInterrupt(chunk)) interrupted = true;
      await sink.onValues(chunk);
    }
    return { interrupted };
  } catch (error) {
    throw stalled ?? error;
  } finally {
    clearTimeout(stall);
    options.signal.removeEventListener('abort', forward);
  }
}

function isInterrupt(values: unknown): boolean {
  const interrupts = (values as { __interrupt__?: unknown } | null)?.__interrupt__;
  return Array.isArray(interrupts) && interrupts.length > 0;
}

export function messagesOf(values: unknown): BaseMessage[] {
  const messages = (values as { messages?: unknown } | null)?.messages;
  return Array.isArray(messages) ? (messages as BaseMessage[]) : [];
}
