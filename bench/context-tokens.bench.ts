/**
 * Group "context": tokens sent to the model per turn on a long thread (I14). 500 turns
 * of a person's messages through the real chat graph (SQLite storage) and the offline
 * demo model, which answers and writes the conversation summary; the agent's budget is
 * 8,000 tokens. Every model call's input is counted with the same tokenizer the server
 * fits with, and set beside what sending the whole thread would have cost.
 */
import { randomUUID } from 'node:crypto';
import type { CallbackManagerForLLMRun } from '@langchain/core/callbacks/manager';
import { HumanMessage, type BaseMessage } from '@langchain/core/messages';
import type { ChatGenerationChunk } from '@langchain/core/outputs';
import { DemoChatModel } from '../src/adapters/llm/demo-chat-model.js';
import { ContextWindow } from '../src/agent/context/context-window.js';
import { TokenCounter } from '../src/agent/context/token-counter.js';
import { buildChatGraph } from '../src/agent/chat-graph.js';
import { runConfig } from '../src/agent/run-settings.js';
import { SUMMARY_REQUEST_MARKER } from '../src/domain/context/conversation-summary.js';
import { textOf } from '../src/domain/message-content.js';
import { openBenchStorage } from './backends.js';
import { userTurnText } from './fixtures.js';
import type { BenchOptions, BenchRow } from './types.js';
import { silentLogger, stats } from './util.js';

const GROUP = 'context';
const BUDGET = 8000;
const SYSTEM_PROMPT = 'You are a helpful assistant. Answer clearly and briefly.';

interface Call {
  turn: number;
  summary: boolean;
  tokens: number;
  messages: number;
  /** The system message (prompt, run rule, summary). */
  system: number;
}

/** The system message of the first reply call: the prompt and run rule, before any summary. */
function systemTokens(model: CountingModel): number {
  return model.calls.find((call) => !call.summary)?.system ?? 0;
}

/** The demo model, counting what every call receives. */
class CountingModel extends DemoChatModel {
  readonly calls: Call[] = [];
  turn = 0;
  constructor(private readonly counter: TokenCounter) {
    super();
  }
  override async *_streamResponseChunks(messages: BaseMessage[], options: this['ParsedCallOptions'], runManager?: CallbackManagerForLLMRun): AsyncGenerator<ChatGenerationChunk> {
    const tokens = messages.reduce((sum, message) => sum + this.counter.message(message).tokens, 0);
    this.calls.push({ turn: this.turn, summary: textOf(messages[0]?.content).startsWith(SUMMARY_REQUEST_MARKER), tokens, messages: messages.length, system: messages[0] ? this.counter.message(messages[0]).tokens : 0 });
    yield* super._streamResponseChunks(messages, options, runManager);
  }
}

export async function benchContextTokens(options: BenchOptions): Promise<BenchRow[]> {
  const turns = options.quick ? 120 : 500;
  const marks = [1, 100, 250, 500].filter((turn) => turn <= turns);
  const counter = new TokenCounter();
  const model = new CountingModel(counter);
  const { storage } = await openBenchStorage(options, 'sqlite', 'context');
  const context = new ContextWindow({ models: () => model, logger: silentLogger, clock: { now: () => new Date() }, counter, serverMaxTokens: BUDGET });
  const graph = buildChatGraph({ checkpointer: storage.checkpointer, memories: storage.memories, models: () => model, logger: silentLogger, context });
  const threadId = randomUUID();
  const settings = { threadId, userId: 'bench-user', agentId: 'default', trigger: 'user' as const, model: 'demo', systemPrompt: SYSTEM_PROMPT };

  const wholeThread: number[] = []; // what the whole thread would cost, per turn
  const summaryTokens: number[] = [];
  const turnMs: number[] = [];
  let inputLimit = 0;
  for (let turn = 1; turn <= turns; turn++) {
    model.turn = turn;
    const started = performance.now();
    const state = await graph.invoke({ messages: [new HumanMessage({ id: randomUUID(), content: userTurnText(turn) })] }, runConfig({ ...settings, runId: randomUUID() }));
    turnMs.push(performance.now() - started);
    // The whole thread as it stood for this turn's reply (everything but the reply itself), with the same system message.
    wholeThread.push(systemTokens(model) + state.messages.slice(0, -1).reduce((sum, message) => sum + counter.message(message).tokens, 0));
    summaryTokens.push(state.summary ? counter.text(state.summary) : 0);
    if (turn === 1) inputLimit = (await context.budget(settings)).maxTokens - (await context.budget(settings)).answerTokens;
    if (turn % 100 === 0) options.progress(`context: ${turn}/${turns} turns`);
  }

  const replies = model.calls.filter((call) => !call.summary);
  const summaries = model.calls.filter((call) => call.summary);
  const table = `model input per reply call, in tokens (budget ${BUDGET.toLocaleString('en-US')}: input limit ${inputLimit.toLocaleString('en-US')} after room for the answer)`;
  const rows: BenchRow[] = [];
  for (const turn of marks) {
    const call = replies.find((entry) => entry.turn === turn)!;
    const line = `turn ${turn}`;
    rows.push(
      { group: GROUP, name: `${line} sent`, value: call.tokens, unit: 'tokens', dims: { table, line, column: 'sent (fitted)' } },
      { group: GROUP, name: `${line} messages`, value: call.messages, unit: 'messages', dims: { table, line, column: 'messages sent' } },
      { group: GROUP, name: `${line} summary`, value: summaryTokens[turn - 1]!, unit: 'tokens', dims: { table, line, column: 'summary in it' } },
      { group: GROUP, name: `${line} whole`, value: wholeThread[turn - 1]!, unit: 'tokens', dims: { table, line, column: 'whole thread (unfitted)' } },
    );
  }
  const over = model.calls.filter((call) => call.tokens > (call.summary ? BUDGET : inputLimit)).length;
  const replyStats = stats(replies.map((call) => call.tokens));
  rows.push(
    { group: GROUP, name: `reply calls within the input limit`, value: replies.length - replies.filter((call) => call.tokens > inputLimit).length, unit: `of ${replies.length}` },
    { group: GROUP, name: 'largest reply call input', value: Math.max(...replies.map((call) => call.tokens)), unit: 'tokens', note: `p50 ${Math.round(replyStats.p50)}` },
    { group: GROUP, name: 'summary calls (folds)', value: summaries.length, unit: 'calls', note: 'each reads the previous summary + the newly folded messages only' },
    { group: GROUP, name: 'largest summary call input', value: summaries.length ? Math.max(...summaries.map((call) => call.tokens)) : 0, unit: 'tokens', note: `budget ${BUDGET}` },
    { group: GROUP, name: 'model calls over budget', value: over, unit: 'calls', note: 'replies and summaries' },
    { group: GROUP, name: 'turn time p50 (graph + SQLite checkpoint + counting)', value: Math.round(stats(turnMs).p50 * 10) / 10, unit: 'ms' },
  );
  return rows;
}
