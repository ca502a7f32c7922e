/**
 * A counting fake chat model for autonomy tests: every call is counted (the proof that a
 * cap stopped a model call is a count that did not move), it can stream slowly, fail,
 * and answer structured-output (evaluator) calls through bindTools as a tool-calling
 * model would. Never the network.
 *
 * Tests share one server and tell their calls apart by a tag in the agent's system
 * prompt, `[tag:<name>]`; the behaviour of a call (its reply, pace, failure, the
 * evaluator's decision) can depend on that tag.
 */
import { BaseChatModel, type BaseChatModelParams } from '@langchain/core/language_models/chat_models';
import type { CallbackManagerForLLMRun } from '@langchain/core/callbacks/manager';
import { AIMessage, AIMessageChunk, HumanMessage, type BaseMessage } from '@langchain/core/messages';
import { ChatGenerationChunk, type ChatResult } from '@langchain/core/outputs';
import { textOf } from '../../src/domain/message-content.js';

export interface FakeModelCall {
  kind: 'reply' | 'structured';
  /** The `[tag:…]` of the agent's system prompt, or '' (an evaluator call carries the reply's tag). */
  tag: string;
  /** The last human message the model saw (a person's text or a trigger's natural prompt). */
  lastHuman: string;
  synthetic: boolean;
  at: number;
}

export interface CallBehaviour {
  reply?: string;
  tokenDelayMs?: number;
  fail?: boolean;
  decision?: { follow_up: boolean; trigger_type: string; reasoning: string };
}

/** Shared by every model instance a resolver hands out, so a test reads one log. */
export class FakeModelLog {
  readonly calls: FakeModelCall[] = [];
  /** How each call behaves; by default a question to a person and a follow-up to a synthetic prompt. */
  behaviour: (call: FakeModelCall) => CallBehaviour = () => ({});

  of(tag: string): FakeModelCall[] {
    return this.calls.filter((call) => call.tag === tag);
  }

  replies(tag: string): number {
    return this.of(tag).filter((call) => call.kind === 'reply').length;
  }

  syntheticReplies(tag: string): number {
    return this.of(tag).filter((call) => call.kind === 'reply' && call.synthetic).length;
  }

  structured(tag: string): number {
    return this.of(tag).filter((call) => call.kind === 'structured').length;
  }

  /** A resolver for startServer's `models` option. */
  resolver(): (spec: string) => CountingChatModel {
    const model = new CountingChatModel(this);
    return () => model;
  }
}

export function tagged(tag: string, prompt = 'You are a test agent.'): string {
  return `${prompt} [tag:${tag}]`;
}

export class CountingChatModel extends BaseChatModel {
  constructor(private readonly log: FakeModelLog, private readonly tools?: Array<{ function?: { name?: string }; name?: string }>, params: BaseChatModelParams = {}) {
    super(params);
  }

  override _llmType(): string {
    return 'counting-fake';
  }

  override bindTools(tools: unknown[]): CountingChatModel {
    // withStructuredOutput binds exactly one tool (the decision); an agent's turn offers its
    // toolbox, which this fake answers in text, as a model that needs no tool would.
    if (tools.length !== 1) return this;
    return new CountingChatModel(this.log, tools as Array<{ function?: { name?: string }; name?: string }>);
  }

  private record(messages: BaseMessage[]): { call: FakeModelCall; behaviour: CallBehaviour } {
    const lastHuman = [...messages].reverse().find((message) => HumanMessage.isInstance(message));
    const all = messages.map((message) => textOf(message.content)).join('\n');
    const call: FakeModelCall = {
      kind: this.tools ? 'structured' : 'reply',
      tag: /\[tag:([\w-]+)\]/.exec(all)?.[1] ?? '',
      lastHuman: lastHuman ? textOf(lastHuman.content) : '',
      synthetic: lastHuman?.additional_kwargs?.synthetic === true,
      at: Date.now(),
    };
    this.log.calls.push(call);
    return { call, behaviour: this.log.behaviour(call) };
  }

  override async _generate(messages: BaseMessage[], options: this['ParsedCallOptions'], runManager?: CallbackManagerForLLMRun): Promise<ChatResult> {
    if (this.tools) {
      const { behaviour } = this.record(messages);
      if (behaviour.fail) throw new Error('the fake provider is down');
      const name = this.tools[0]?.function?.name ?? this.tools[0]?.name ?? 'extract';
      const decision = behaviour.decision ?? { follow_up: true, trigger_type: 'check_in', reasoning: 'a default decision' };
      // What a tool-calling provider returns: a chunk carrying the call.
      const message = new AIMessageChunk({ content: '', tool_calls: [{ name, args: decision, id: 'call-1', type: 'tool_call' }] });
      return { generations: [{ text: '', message }] };
    }
    let text = '';
    for await (const chunk of this._streamResponseChunks(messages, options, runManager)) text += chunk.text;
    return { generations: [{ text, message: new AIMessage({ content: text, response_metadata: { model_name: 'counting-fake' } }) }] };
  }

  override async *_streamResponseChunks(messages: BaseMessage[], options: this['ParsedCallOptions'], runManager?: CallbackManagerForLLMRun): AsyncGenerator<ChatGenerationChunk> {
    const { call, behaviour } = this.record(messages);
    if (behaviour.fail) throw new Error('the fake provider is down');
    const reply = behaviour.reply ?? (call.synthetic ? `Following up: ${call.lastHuman.slice(0, 40)}` : `You said "${call.lastHuman.slice(0, 60)}". Shall we go on?`);
    const tokens = reply.split(/(?<=\s)/);
    for (let index = 0; index < tokens.length; index++) {
      if (options.signal?.aborted) throw options.signal.reason ?? new Error('aborted');
      if (behaviour.tokenDelayMs) await delay(behaviour.tokenDelayMs, options.signal);
      const token = tokens[index]!;
      const chunk = new ChatGenerationChunk({ text: token, message: new AIMessageChunk({ content: token, response_metadata: index === tokens.length - 1 ? { model_name: 'counting-fake' } : {} }) });
      yield chunk;
      await runManager?.handleLLMNewToken(token, undefined, undefined, undefined, undefined, { chunk });
    }
  }
}

function delay(milliseconds: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, milliseconds);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason ?? new Error('aborted'));
      },
      { once: true },
    );
  });
}
