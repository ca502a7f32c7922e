import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import type { RunnableConfig } from '@langchain/core/runnables';
import type { ChatModelResolver } from '../../app/ports.js';
import { summaryInstruction, summaryRequestText, type TranscriptLine } from '../../domain/context/conversation-summary.js';
import { textOf } from '../../domain/message-content.js';
import { classifyMessage } from '../../domain/message-metadata.js';
import type { TokenCounter } from './token-counter.js';

export interface SummaryRequest {
  model: string;
  previous: string | null;
  folded: readonly BaseMessage[];
  /** The most the summary may take. */
  summaryTokens: number;
  /** The most the request's messages may take (the transcript is cut to it). */
  maxInputTokens: number;
}

/**
 * One summary call: the previous summary and the newly folded messages in, the new
 * summary out — never the whole thread again. The call's messages exist only for the
 * call; its tokens never stream to a person (tagged nostream), and its answer is kept
 * as the summary, not as a message.
 */
export async function summarizeMessages(models: ChatModelResolver, counter: TokenCounter, request: SummaryRequest, config: RunnableConfig): Promise<string> {
  const instruction = summaryInstruction(request.summaryTokens);
  const room = Math.max(200, request.maxInputTokens - counter.text(instruction) - 16);
  const text = summaryRequestText(request.previous, request.folded.map(transcriptLineOf));
  const fitted = counter.text(text) <= room ? text : `${counter.truncate(text, room - 12)}\n[… cut to fit]`;
  const reply = await models(request.model).invoke([new SystemMessage(instruction), new HumanMessage(fitted)], {
    ...(config.signal ? { signal: config.signal } : {}),
    // LangGraph's message stream skips runs tagged nostream: a person never sees this call's tokens.
    tags: ['nostream'],
    runName: 'conversation_summary',
  });
  const summary = textOf(reply.content).trim();
  if (!summary) throw new Error('the summary model answered with no text');
  return counter.text(summary) <= request.summaryTokens ? summary : `${counter.truncate(summary, request.summaryTokens - 4)}…`;
}

/** Who wrote a message, as the summary model must read it (I2: system-written text is never the person's). */
export function transcriptLineOf(message: BaseMessage): TranscriptLine {
  if (ToolMessage.isInstance(message)) return { role: 'tool', text: textOf(message.content) };
  if (AIMessage.isInstance(message)) {
    const calls = (message.tool_calls ?? []).map((call) => `[called ${call.name} ${JSON.stringify(call.args)}]`).join(' ');
    return { role: 'assistant', text: [textOf(message.content), calls].filter(Boolean).join(' ') };
  }
  const classification = classifyMessage({ type: message.getType(), content: message.content, additional_kwargs: message.additional_kwargs });
  if (message.getType() === 'human' && classification.visibility === 'user') return { role: 'person', text: textOf(message.content) };
  return { role: 'system', text: textOf(message.content) };
}
