import type { BaseMessage } from '@langchain/core/messages';
import type { BaseLanguageModelInput } from '@langchain/core/language_models/base';
import { FakeListChatModel } from '@langchain/core/utils/testing';

/**
 * A fake chat model that records the exact message list of every call: what the model
 * saw, so a test can check the envelope, its place and the system prompt rule.
 */
export class RecordingModel extends FakeListChatModel {
  readonly calls: BaseMessage[][] = [];

  constructor(responses: string[] = ['noted']) {
    super({ responses });
  }

  override async invoke(input: BaseLanguageModelInput, options?: this['ParsedCallOptions']) {
    if (Array.isArray(input)) this.calls.push([...(input as BaseMessage[])]);
    return super.invoke(input, options);
  }

  /** Offered tools (an agent's toolbox), it answers in text like a model without tool calling: every call is still recorded. */
  override bindTools(): this {
    return this;
  }

  lastCall(): BaseMessage[] {
    const call = this.calls.at(-1);
    if (!call) throw new Error('the model was never called');
    return call;
  }
}
