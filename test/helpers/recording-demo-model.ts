import type { CallbackManagerForLLMRun } from '@langchain/core/callbacks/manager';
import type { BaseMessage } from '@langchain/core/messages';
import type { ChatGenerationChunk } from '@langchain/core/outputs';
import { DemoChatModel } from '../../src/adapters/llm/demo-chat-model.js';
import { SUMMARY_REQUEST_MARKER } from '../../src/domain/context/conversation-summary.js';
import { textOf } from '../../src/domain/message-content.js';

export interface RecordedCall {
  messages: BaseMessage[];
  /** A conversation-summary call (its system prompt carries the summary request marker). */
  summary: boolean;
}

/**
 * The offline demo model, recording every call it receives (replies and summaries), and
 * able to fail its next summary calls — to show that a failed fold loses nothing.
 */
export class RecordingDemoModel extends DemoChatModel {
  readonly calls: RecordedCall[] = [];
  /** How many of the next summary calls throw. */
  failSummaries = 0;

  override async *_streamResponseChunks(messages: BaseMessage[], options: this['ParsedCallOptions'], runManager?: CallbackManagerForLLMRun): AsyncGenerator<ChatGenerationChunk> {
    const summary = textOf(messages[0]?.content).startsWith(SUMMARY_REQUEST_MARKER);
    this.calls.push({ messages: [...messages], summary });
    if (summary && this.failSummaries > 0) {
      this.failSummaries -= 1;
      throw new Error('summary model unavailable (scripted failure)');
    }
    yield* super._streamResponseChunks(messages, options, runManager);
  }

  replies(): RecordedCall[] {
    return this.calls.filter((call) => !call.summary);
  }

  summaries(): RecordedCall[] {
    return this.calls.filter((call) => call.summary);
  }
}
