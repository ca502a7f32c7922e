import { BaseChatModel, type BaseChatModelParams } from '@langchain/core/language_models/chat_models';
import type { CallbackManagerForLLMRun } from '@langchain/core/callbacks/manager';
import { AIMessage, AIMessageChunk, HumanMessage, type BaseMessage } from '@langchain/core/messages';
import { ChatGenerationChunk, type ChatResult } from '@langchain/core/outputs';
import { textOf } from '../../domain/message-content.js';
import { MEMORY_BLOCK_CLOSE, MEMORY_BLOCK_OPEN } from '../../domain/recalled-memories.js';
import { isAutonomousTriggerType, isSynthetic, type AutonomousTriggerType } from '../../domain/message-metadata.js';
import { SUMMARY_REQUEST_MARKER } from '../../domain/context/conversation-summary.js';
import { decisionAsked, demoDecision, demoPlanSummary } from './demo-planner-answers.js';

/** How many of the person's recent sayings the demo summary keeps (it must stay bounded). */
const DEMO_SUMMARY_QUOTES = 8;

/** The label every demo reply carries, in its response metadata and in the API. */
export const DEMO_MODEL_NAME = 'vigil-demo';

const FOLLOW_UPS: Record<AutonomousTriggerType, string> = {
  check_in: 'Just checking in — is there anything else I can help with?',
  question_unanswered: 'Following up on my earlier question — do you have an answer when you get a moment?',
  task_incomplete: 'Checking in on the task we discussed — how is it going?',
  waiting_for_decision: 'Have you had a chance to decide? I am ready when you are.',
};

export interface DemoChatModelOptions extends BaseChatModelParams {
  /** Pause between streamed tokens, so a person can watch streaming; 0 in tests. */
  tokenDelayMs?: number;
}

/**
 * The offline demo model: deterministic, streams word by word, never touches the
 * network. It lets a newcomer see replies, follow-ups and visibility at work without a
 * provider, and says plainly that it is a demo. Its replies end with a question, so the
 * demo agent's follow-up comes; a planner agent on it runs a short scripted plan with
 * tool calls and critic verdicts (demo-planner-answers.ts).
 */
/** Who wrote a synthetic task, by its trigger type, as the demo model names it. */
const SYSTEM_SOURCES: Readonly<Record<string, string>> = { cron: 'Your schedule', webhook: 'A webhook', heartbeat: 'The plan overlord' };

export class DemoChatModel extends BaseChatModel {
  private readonly tokenDelayMs: number;

  constructor(options: DemoChatModelOptions = {}) {
    super(options);
    this.tokenDelayMs = options.tokenDelayMs ?? 0;
  }

  static override lc_name(): string {
    return 'VigilDemoChatModel';
  }

  override _llmType(): string {
    return 'vigil-demo';
  }

  /** The reply text for a conversation: pure function of the messages. */
  static replyFor(messages: readonly BaseMessage[]): string {
    const first = messages[0];
    if (first?.getType() === 'system' && textOf(first.content).startsWith(SUMMARY_REQUEST_MARKER)) {
      return DemoChatModel.summaryFor(textOf(messages.at(-1)?.content));
    }
    const lastHuman = [...messages].reverse().find((message) => HumanMessage.isInstance(message));
    const last = messages.at(-1);
    const decision = last?.getType() === 'system' ? decisionAsked(textOf(last.content)) : undefined;
    if (decision) return JSON.stringify(demoDecision(decision, jsonObjectOf(textOf(lastHuman?.content))) ?? {});
    const outcome = first?.getType() === 'system' ? planOutcomeOf(textOf(first.content)) : undefined;
    if (outcome) return demoPlanSummary(outcome);
    if (!lastHuman) return '[demo model] Hello! No model is configured, so this is the offline demo model talking.';
    const kwargs = lastHuman.additional_kwargs;
    if (isSynthetic(kwargs) && isAutonomousTriggerType(kwargs.trigger_type)) return `[demo model] ${FOLLOW_UPS[kwargs.trigger_type]}`;
    const text = textOf(lastHuman.content).replace(/\s+/g, ' ').trim();
    const quoted = text.length > 200 ? `${text.slice(0, 199)}…` : text;
    const system = messages.find((message) => message.getType() === 'system');
    // One quoted memory a line inside the recalled-memories data block.
    const recalled = system ? recalledMemoryCount(textOf(system.content)) : 0;
    const memoryNote = recalled > 0 ? ` I recalled ${recalled} related memor${recalled === 1 ? 'y' : 'ies'}.` : '';
    // A task the system wrote in the person's role (a schedule's, a webhook's) is not the person's words (I1).
    const said = isSynthetic(kwargs) ? `${SYSTEM_SOURCES[String(kwargs.trigger_type)] ?? 'The system'} asked` : 'You said';
    return `[demo model] ${said}: "${quoted}".${memoryNote} Configure VIGIL_MODEL for real answers. Anything else?`;
  }

  /**
   * A deterministic conversation summary (so context folding is testable offline): how
   * many lines have been folded so far, and the person's most recent words, bounded.
   * It reads only the summary request's quoted previous summary and new messages.
   */
  static summaryFor(request: string): string {
    const previous = /<summary_so_far>\n([\s\S]*?)\n?<\/summary_so_far>/.exec(request)?.[1] ?? '';
    const lines = (/<new_messages>\n([\s\S]*?)\n?<\/new_messages>/.exec(request)?.[1] ?? '').split('\n').filter(Boolean);
    const before = /^\[demo summary\] (\d+) messages folded\./.exec(previous);
    const count = Number(before?.[1] ?? 0) + lines.length;
    const earlier = /The person said: (.*)$/.exec(previous)?.[1]?.split(' | ').filter(Boolean) ?? [];
    const said = lines.filter((line) => line.startsWith('person: ')).map((line) => `"${line.slice(8, 68).replace(/["|]/g, "'")}"`);
    const kept = [...earlier, ...said].slice(-DEMO_SUMMARY_QUOTES);
    return `[demo summary] ${count} messages folded.${kept.length > 0 ? ` The person said: ${kept.join(' | ')}` : ''}`;
  }

  override async _generate(messages: BaseMessage[], options: this['ParsedCallOptions'], runManager?: CallbackManagerForLLMRun): Promise<ChatResult> {
    let text = '';
    for await (const chunk of this._streamResponseChunks(messages, options, runManager)) text += chunk.text;
    return {
      generations: [{ text, message: new AIMessage({ content: text, response_metadata: demoResponseMetadata() }) }],
    };
  }

  override async *_streamResponseChunks(
    messages: BaseMessage[],
    options: this['ParsedCallOptions'],
    runManager?: CallbackManagerForLLMRun,
  ): AsyncGenerator<ChatGenerationChunk> {
    const tokens = DemoChatModel.replyFor(messages).split(/(?<=\s)/);
    for (let index = 0; index < tokens.length; index++) {
      if (options.signal?.aborted) throw options.signal.reason ?? new Error('aborted');
      if (this.tokenDelayMs > 0) await delay(this.tokenDelayMs, options.signal);
      const token = tokens[index]!;
      const last = index === tokens.length - 1;
      const chunk = new ChatGenerationChunk({
        text: token,
        message: new AIMessageChunk({ content: token, response_metadata: last ? demoResponseMetadata() : {} }),
      });
      yield chunk;
      await runManager?.handleLLMNewToken(token, undefined, undefined, undefined, undefined, { chunk });
    }
  }
}

export function demoResponseMetadata(): Record<string, unknown> {
  return { model_name: DEMO_MODEL_NAME, demo: true };
}

function delay(milliseconds: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, milliseconds);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason ?? new Error('aborted'));
    }, { once: true });
  });
}

/** A JSON object from a text, or an empty one. */
function jsonObjectOf(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** The planner's closing call names the plan's outcome after this line (agent/planner/planner-prompts.ts). */
const PLAN_OUTCOME_MARKER = 'Plan outcome (JSON):\n';

function planOutcomeOf(systemText: string): Record<string, unknown> | undefined {
  const start = systemText.indexOf(PLAN_OUTCOME_MARKER);
  if (start < 0) return undefined;
  const line = systemText.slice(start + PLAN_OUTCOME_MARKER.length).split('\n')[0] ?? '';
  const outcome = jsonObjectOf(line);
  return Object.keys(outcome).length > 0 ? outcome : undefined;
}

function recalledMemoryCount(systemText: string): number {
  const start = systemText.indexOf(MEMORY_BLOCK_OPEN);
  const end = systemText.indexOf(MEMORY_BLOCK_CLOSE, start);
  if (start < 0 || end < 0) return 0;
  return systemText.slice(start + MEMORY_BLOCK_OPEN.length, end).split('\n').filter((line) => line.trim()).length;
}
