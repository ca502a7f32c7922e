import { BaseCallbackHandler } from '@langchain/core/callbacks/base';
import { AIMessageChunk, isBaseMessage, type BaseMessage } from '@langchain/core/messages';
import type { Serialized } from '@langchain/core/load/serializable';

/**
 * A run's model tokens, from the chat models' own callbacks.
 *
 * Why not LangGraph's `messages` stream mode: its handler also records every message of
 * every node's input at each node start (to tell new messages from old ones in node
 * outputs), a walk over the whole thread per step that grows with the thread's age
 * (2 ms a turn at 10,000 messages), for whole messages vigil does not stream anyway
 * (message.end comes from the stored history rows). Tokens are all vigil takes from it.
 *
 * `lc_prefer_streaming` asks chat models to stream when invoked, as LangGraph's handler
 * does; `awaitHandlers` delivers each token before the model goes on, so a token is never
 * announced after the step that holds its message has ended.
 */
export class ReplyTokenHandler extends BaseCallbackHandler {
  name = 'vigil_reply_tokens';
  lc_prefer_streaming = true;
  override awaitHandlers = true;
  /** Each model call in progress, by its run id: whether its tokens are a reply's. */
  readonly #calls = new Map<string, { reply: boolean }>();

  constructor(
    private readonly on: {
      /** Any model token, in any node (a sign of life for the stall watch). */
      token(): void;
      /** A token of a model call in a reply node; `callId` is the call's callback run id (one per model call). */
      replyChunk(message: BaseMessage, callId: string): void;
    },
    private readonly replyNodes: ReadonlySet<string>,
  ) {
    super();
  }

  override handleChatModelStart(_llm: Serialized, _messages: BaseMessage[][], runId: string, _parentRunId?: string, _extraParams?: Record<string, unknown>, tags?: string[], metadata?: Record<string, unknown>): void {
    if (metadata === undefined || tags?.includes('nostream') || tags?.includes('langsmith:nostream')) return;
    // Chat models' callbacks carry ls_model_type; a reply node's other runnables do not.
    this.#calls.set(runId, { reply: this.replyNodes.has(String(metadata.langgraph_node)) && metadata.ls_model_type !== undefined });
  }

  override handleLLMNewToken(token: string, _idx: unknown, runId: string, _parentRunId?: string, _tags?: string[], fields?: { chunk?: unknown }): void {
    const call = this.#calls.get(runId);
    if (call === undefined) return;
    this.on.token();
    if (!call.reply) return;
    const chunk = (fields?.chunk as { message?: unknown } | undefined)?.message;
    this.on.replyChunk(isBaseMessage(chunk) ? chunk : new AIMessageChunk({ content: token }), runId);
  }

  override handleLLMEnd(_output: unknown, runId: string): void {
    this.#calls.delete(runId);
  }

  override handleLLMError(_error: unknown, runId: string): void {
    this.#calls.delete(runId);
  }
}
