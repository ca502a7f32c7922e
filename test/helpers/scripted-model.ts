import { BaseChatModel, type BaseChatModelCallOptions, type BaseChatModelParams, type BindToolsInput } from '@langchain/core/language_models/chat_models';
import type { CallbackManagerForLLMRun } from '@langchain/core/callbacks/manager';
import { AIMessageChunk, type BaseMessage } from '@langchain/core/messages';
import { ChatGenerationChunk, type ChatResult } from '@langchain/core/outputs';
import type { Runnable } from '@langchain/core/runnables';
import { textOf } from '../../src/domain/message-content.js';

/**
 * A scripted fake chat model for planner tests: no network, deterministic.
 *
 * Answers are scripted per *decision*: when the caller binds a tool (which is what
 * `withStructuredOutput(schema, { name })` does), the model answers from the queue of
 * that name with a tool call whose arguments are the scripted JSON — so the planner's
 * real structured-output path runs, zod validation included. A scripted answer that is
 * not JSON comes back as plain text, which the structured parser rejects (a malformed
 * answer). Plain calls (no tool bound) answer from the `text` queue, streamed word by
 * word.
 *
 * A queue entry is a string, an object (sent as JSON), or a function of the call; the
 * last entry of a queue created with `always()` repeats forever.
 */
export type ScriptedAnswer = string | Record<string, unknown> | ((call: ScriptedCall) => string | Record<string, unknown>);

export interface ScriptedCall {
  /** The bound tool's name (the decision), or 'text'. */
  name: string;
  messages: BaseMessage[];
  /** 1-based count of calls of this name. */
  index: number;
  /** The tools bound to the call as the provider would receive them (a structured decision's schema is one). */
  tools: Array<{ name: string; description: string; parameters: Record<string, unknown> }>;
}

const REPEAT = Symbol('repeat');
type Queue = ScriptedAnswer[] & { [REPEAT]?: boolean };

/** A queue whose last answer repeats forever. */
export function always(...answers: ScriptedAnswer[]): ScriptedAnswer[] {
  const queue: Queue = [...answers];
  queue[REPEAT] = true;
  return queue;
}

interface ScriptedCallOptions extends BaseChatModelCallOptions {
  tools?: BindToolsInput[];
}

export class ScriptedChatModel extends BaseChatModel<ScriptedCallOptions> {
  readonly calls: ScriptedCall[] = [];
  private readonly queues = new Map<string, Queue>();
  private readonly counts = new Map<string, number>();

  constructor(script: Record<string, ScriptedAnswer[]> = {}, params: BaseChatModelParams = {}) {
    super(params);
    for (const [name, answers] of Object.entries(script)) this.queues.set(name, answers as Queue);
  }

  static override lc_name(): string {
    return 'ScriptedChatModel';
  }

  override _llmType(): string {
    return 'scripted';
  }

  /** Add answers to a decision's queue. */
  script(name: string, ...answers: ScriptedAnswer[]): this {
    const queue = this.queues.get(name) ?? [];
    queue.push(...answers);
    this.queues.set(name, queue);
    return this;
  }

  /** Calls of one decision, in order. */
  callsOf(name: string): ScriptedCall[] {
    return this.calls.filter((call) => call.name === name);
  }

  override bindTools(tools: BindToolsInput[], kwargs?: Partial<ScriptedCallOptions>): Runnable<any, AIMessageChunk, ScriptedCallOptions> {
    return this.withConfig({ ...kwargs, tools } as Partial<ScriptedCallOptions>) as unknown as Runnable<any, AIMessageChunk, ScriptedCallOptions>;
  }

  override async _generate(messages: BaseMessage[], options: this['ParsedCallOptions'], runManager?: CallbackManagerForLLMRun): Promise<ChatResult> {
    let message: AIMessageChunk | undefined;
    for await (const chunk of this._streamResponseChunks(messages, options, runManager)) message = message ? message.concat(chunk.message as AIMessageChunk) : (chunk.message as AIMessageChunk);
    const final = message ?? new AIMessageChunk({ content: '' });
    // An AIMessageChunk, as streaming providers return: LangChain's default
    // withStructuredOutput parser accepts only chunks.
    return { generations: [{ text: textOf(final.content), message: final }] };
  }

  override async *_streamResponseChunks(messages: BaseMessage[], options: this['ParsedCallOptions'], runManager?: CallbackManagerForLLMRun): AsyncGenerator<ChatGenerationChunk> {
    const name = toolNameOf(options.tools?.[0]) ?? 'text';
    const index = (this.counts.get(name) ?? 0) + 1;
    this.counts.set(name, index);
    const call: ScriptedCall = { name, messages, index, tools: (options.tools ?? []).map(toolSchemaOf).filter((tool) => tool !== undefined) };
    this.calls.push(call);
    const answer = this.next(call);
    const text = typeof answer === 'string' ? answer : JSON.stringify(answer);
    const inputTokens = Math.ceil(messages.reduce((sum, message) => sum + textOf(message.content).length, 0) / 4);
    const outputTokens = Math.ceil(text.length / 4);
    const usage = { input_tokens: inputTokens, output_tokens: outputTokens, total_tokens: inputTokens + outputTokens };
    if (options.signal?.aborted) throw options.signal.reason ?? new Error('aborted');
    if (name !== 'text' && isJsonObject(text)) {
      yield new ChatGenerationChunk({
        text: '',
        message: new AIMessageChunk({
          content: '',
          tool_call_chunks: [{ type: 'tool_call_chunk', name, args: text, id: `call_${name}_${index}`, index: 0 }],
          usage_metadata: usage,
          response_metadata: { model_name: 'scripted' },
        }),
      });
      return;
    }
    const tokens = text.split(/(?<=\s)/);
    for (let position = 0; position < tokens.length; position++) {
      const token = tokens[position]!;
      const last = position === tokens.length - 1;
      const chunk = new ChatGenerationChunk({
        text: token,
        message: new AIMessageChunk({ content: token, ...(last ? { usage_metadata: usage, response_metadata: { model_name: 'scripted' } } : {}) }),
      });
      yield chunk;
      await runManager?.handleLLMNewToken(token, undefined, undefined, undefined, undefined, { chunk });
    }
  }

  private next(call: ScriptedCall): string | Record<string, unknown> {
    const queue = this.queues.get(call.name);
    if (!queue || queue.length === 0) throw new Error(`scripted model: no answer left for "${call.name}" (call ${call.index})`);
    const answer = queue.length === 1 && queue[REPEAT] ? queue[0]! : queue.shift()!;
    return typeof answer === 'function' ? answer(call) : answer;
  }
}

function toolSchemaOf(tool: BindToolsInput): ScriptedCall['tools'][number] | undefined {
  const definition = (tool as { function?: { name?: unknown; description?: unknown; parameters?: unknown } }).function;
  if (typeof definition?.name !== 'string') return undefined;
  return { name: definition.name, description: typeof definition.description === 'string' ? definition.description : '', parameters: (definition.parameters ?? {}) as Record<string, unknown> };
}

function toolNameOf(tool: BindToolsInput | undefined): string | undefined {
  if (!tool || typeof tool !== 'object') return undefined;
  const record = tool as { name?: unknown; function?: { name?: unknown } };
  if (typeof record.function?.name === 'string') return record.function.name;
  return typeof record.name === 'string' ? record.name : undefined;
}

function isJsonObject(text: string): boolean {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value);
  } catch {
    return false;
  }
}
