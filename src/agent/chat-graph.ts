import { Annotation, END, START, StateGraph, messagesStateReducer } from '@langchain/langgraph';
import { BUDGETED_TRIGGERS, takePrepaidCall } from '../domain/autonomy/autonomous-triggers.js';
import { adoptMessage, vigilMessagesReducer } from './message-identity.js';
import type { BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';
import { BaseMessageChunk, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { recallForTurn, type MemoryRecallDependencies, type RecalledMemory } from './memory-recall.js';
import type { RunnableConfig } from '@langchain/core/runnables';
import { modelCallConfig } from './model-call-config.js';
import type { Logger } from 'pino';
import { NO_QUERY_SOURCE_MESSAGE, skippedQueryLevel, type MemoryQuerySource } from '../domain/memory-query.js';
import type { ChatModelResolver, MemoryStore } from '../app/ports.js';
import type { SummaryCoverage } from '../domain/context/conversation-summary.js';
import { ContextWindow, type ContextState, type PreparedCall, type PrepareOptions } from './context/context-window.js';
import { runSettingsOf, type ActiveRunSettings } from './run-settings.js';
import { bindTools, closeDanglingToolCalls, TOOLS_NODE, type ToolLoop } from './tool-loop/tool-loop.js';

/**
 * Thread state. Everything here is serialisable (I10): messages, strings, plain objects.
 * `recalled` is replaced on every turn, never appended: recalled memories go into that
 * turn's model call only, never into the saved message history.
 */
export const ChatState = Annotation.Root({
  messages: Annotation<BaseMessage[]>({ reducer: vigilMessagesReducer, default: () => [] }),
  summary: Annotation<string | null>({ reducer: (_previous, next) => next, default: () => null }),
  /** What `summary` stands for (I14): written with it, in the same checkpoint, so the two never disagree. */
  summaryCoverage: Annotation<SummaryCoverage | null>({ reducer: (_previous, next) => next, default: () => null }),
  recalled: Annotation<RecalledMemory[]>({ reducer: (_previous, next) => next, default: () => [] }),
  memoryQuerySource: Annotation<MemoryQuerySource | null>({ reducer: (_previous, next) => next, default: () => null }),
});
export type ChatStateValue = typeof ChatState.State;

export interface ChatGraphDependencies {
  checkpointer: BaseCheckpointSaver;
  memories: MemoryStore;
  models: ChatModelResolver;
  logger: Logger;
  /** How many memories one turn recalls. */
  memoryLimit?: number;
  /** Fits every model call into the agent's context budget (I14); a default one uses the server-wide budget. */
  context?: ContextWindow;
  /** The agent's tools (model → tools → model); absent: the model answers with text alone. */
  toolLoop?: ToolLoop;
  /**
   * Asked before a model call of a run of the agent acting on its own (BUDGETED_TRIGGERS)
   * that its admission did not pay for (a tool loop's later steps): it spends the daily
   * autonomy budget too (I5). False: no call, the turn ends with its tool results.
   */
  admitModelCall?: (run: { userId: string; agentId: string }) => Promise<boolean>;
}

export const RESPOND_NODE = 'respond';
export const MEMORY_NODE = 'recall_memories';

/** respond (recalling memories first in a turn) → tools → respond, until the model answers in text. */
export function buildChatGraph(dependencies: ChatGraphDependencies) {
  const { models, logger, toolLoop } = dependencies;
  const context = dependencies.context ?? new ContextWindow({ models, logger, clock: { now: () => new Date() } });

  async function recallMemories(state: ChatStateValue, config: RunnableConfig): Promise<Partial<ChatStateValue>> {
    const run = runSettingsOf(config);
    const log = logger.child({ threadId: run.threadId, runId: run.runId });
    const { recalled, memoryQuerySource, query } = await recallForTurn(dependencies, state, run);
    if (memoryQuerySource === 'none') log[skippedQueryLevel(run.trigger)]({ messageCount: state.messages.length, trigger: run.trigger }, NO_QUERY_SOURCE_MESSAGE);
    else log.debug({ querySource: memoryQuerySource, query: query.slice(0, 50) }, 'Memory query source selected');
    return { recalled, memoryQuerySource };
  }

  async function respond(stateIn: ChatStateValue, config: RunnableConfig): Promise<Partial<ChatStateValue>> {
    // A turn's first model call recalls memories first (in the same step: one checkpoint
    // fewer per turn than a node of its own); the calls after its tool results reuse them.
    const recall = ToolMessage.isInstance(stateIn.messages.at(-1)) ? undefined : await recallMemories(stateIn, config);
    const state = recall === undefined ? stateIn : { ...stateIn, ...recall };
    const run = runSettingsOf(config);
    // The attempt's first call was paid as the run was admitted (or retried); each later one pays its way.
    if (BUDGETED_TRIGGERS.has(run.trigger) && !takePrepaidCall(config.configurable) && dependencies.admitModelCall && !(await dependencies.admitModelCall(run))) {
      logger.info({ threadId: run.threadId, runId: run.runId, trigger: run.trigger }, 'the autonomy model-call budget is spent: the turn ends after its tool results, without another model call');
      return {};
    }
    // The recalled memories, the run context rule, the envelope and the summary live in
    // this call's input only; the saved history receives just the reply (and a new
    // summary). Memories are data after the rules, never prompt text.
    const { model, input } = await prepareChatCall({ context, models, toolLoop }, state, run, config, recalledInput(state));
    if (input.envelope !== undefined) {
      const { stage, bytes, dropped, cut } = input.envelope;
      logger.debug({ threadId: run.threadId, runId: run.runId, trigger: run.trigger, stage, bytes, dropped, cut }, 'run envelope shown to the model');
    }
    const reply = await model.invoke(input.messages, modelCallConfig(config));
    input.observe(reply);
    return { messages: [settledReply(reply)], ...(recall ?? {}), ...(input.update ?? {}) };
  }

  const graph = new StateGraph(ChatState)
    .addNode(MEMORY_NODE, recallMemories)
    .addNode(RESPOND_NODE, respond)
    .addNode(TOOLS_NODE, async (state: ChatStateValue, config: RunnableConfig) => ({ messages: toolLoop ? await toolLoop.runTools(state.messages, config) : [] }))
    // Always respond. recall_memories stays for checkpoints saved while it was a step of
    // its own (a turn a crash left waiting at it resumes there, then responds); LangGraph
    // accepts only reachable nodes, hence the route that names it and never takes it.
    .addConditionalEdges(START, () => RESPOND_NODE, [RESPOND_NODE, MEMORY_NODE])
    .addEdge(MEMORY_NODE, RESPOND_NODE)
    // respond → tools → respond until the model answers in text; bounded by the tool loop (I9).
    .addConditionalEdges(RESPOND_NODE, async (state: ChatStateValue, config: RunnableConfig) => (toolLoop && (await toolLoop.route(state.messages, runSettingsOf(config))) === 'tools' ? TOOLS_NODE : END), [TOOLS_NODE, END])
    .addEdge(TOOLS_NODE, RESPOND_NODE);
  return graph.compile({ checkpointer: dependencies.checkpointer });
}

export type ChatGraph = ReturnType<typeof buildChatGraph>;

/** The recalled memories as a chat call's input carries them (fitted to their share in ContextWindow.prepare). */
export function recalledInput(state: { recalled: readonly RecalledMemory[]; memoryQuerySource: MemoryQuerySource | null }): PrepareOptions {
  return { recalled: { memories: state.recalled, foundBy: state.memoryQuerySource } };
}

export interface ChatCallDependencies {
  context: ContextWindow;
  models: ChatModelResolver;
  toolLoop?: ToolLoop | undefined;
}

/**
 * A chat model call, prepared: the one preparation both the call itself and
 * GET /api/threads/{id}/context go through, so the API shows exactly what the next call
 * receives (I14). The tools the call binds are counted as input (their definitions reach
 * the provider with the messages); a tool call left unanswered (a superseded approval, a
 * bound that ended the turn) is closed for the model, never in history.
 */
export async function prepareChatCall(deps: ChatCallDependencies, state: ContextState, run: ActiveRunSettings, config: RunnableConfig, options: PrepareOptions = {}) {
  const base = deps.models(run.model);
  const tools = deps.toolLoop ? await deps.toolLoop.offeredTools(base, state.messages, run) : [];
  const input: PreparedCall = await deps.context.prepare({ ...state, messages: closeDanglingToolCalls(state.messages) }, run, config, { ...options, tools });
  return { model: bindTools(base, tools), input };
}

/**
 * The reply as state keeps it: with vigil's id (I13) and, for a streamed reply (a chunk),
 * as the plain message the channel's reducer would make of it. Done here so the step's
 * pending write and the checkpoint after it hold the same message, which the message
 * log then stores once (a chunk in the write was a second copy of every reply).
 */
function settledReply(reply: BaseMessage): BaseMessage {
  const adopted = adoptMessage(reply);
  return BaseMessageChunk.isInstance(adopted) ? messagesStateReducer([], [adopted])[0]! : adopted;
}

