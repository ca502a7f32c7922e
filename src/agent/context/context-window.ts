import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { BUDGETED_TRIGGERS } from '../../domain/autonomy/autonomous-triggers.js';
import type { RunnableConfig } from '@langchain/core/runnables';
import type { InteropZodType } from '@langchain/core/utils/types';
import type { Logger } from 'pino';
import type { AgentRepository, ChatModelResolver, Clock } from '../../app/ports.js';
import { contextSettingsOf, contextSettingsSchema, resolveContextBudget, SYSTEM_PROMPT_SHARE, type ContextBudget } from '../../domain/context/context-settings.js';
import { modelInputRecordOf, type ContextReport, type ModelInputRecord } from '../../domain/context/context-report.js';
import { summaryInstruction, summaryRequestText, withSummarySection, type SummaryCoverage } from '../../domain/context/conversation-summary.js';
import { fitWindow, planFold, unitsOf, type FitItem, type FitKind } from '../../domain/context/fit-window.js';
import type { Envelope } from '../../domain/envelope/build-envelope.js';
import { hasEnvelopeMarker } from '../../domain/envelope/envelope-marker.js';
import { textOf } from '../../domain/message-content.js';
import type { MemoryQuerySource } from '../../domain/memory-query.js';
import { memoryDataBlock, type RecalledMemoryData } from '../../domain/recalled-memories.js';
import { buildModelInput, type ModelInputOptions } from '../envelope-injection.js';
import type { ActiveRunSettings } from '../run-settings.js';
import { summarizeMessages } from './conversation-summarizer.js';
import { isMediaBlock, MEDIA_PLACEHOLDER, TokenCounter, type ToolSchema } from './token-counter.js';
import { UsageCalibration } from './usage-calibration.js';

/** The part of a thread's state the context window reads: every graph keeps these channels. */
export interface ContextState {
  messages: readonly BaseMessage[];
  summary: string | null;
  summaryCoverage: SummaryCoverage | null;
}

/** A new summary and what it covers, for the graph to write to state with the reply. */
export interface SummaryUpdate {
  summary: string;
  summaryCoverage: SummaryCoverage;
}

export interface PreparedCall {
  /** What to send: system prompt (with the summary), envelope when shown, the messages that fit. */
  messages: BaseMessage[];
  envelope: Envelope | undefined;
  /** Set when this call folded older messages into the summary. */
  update: SummaryUpdate | undefined;
  report: ContextReport;
  /** Give it the reply: its reported usage corrects later counts. */
  observe(reply: BaseMessage): void;
}

export interface ContextWindowDependencies {
  models: ChatModelResolver;
  logger: Logger;
  clock: Clock;
  /** The agents' context settings; without it, every agent uses the server's budget. */
  agents?: Pick<AgentRepository, 'get'>;
  /** VIGIL_CONTEXT_TOKENS. */
  serverMaxTokens?: number | undefined;
  counter?: TokenCounter;
  /**
   * Asked before a summary call of an autonomous run: the call spends the agent's
   * autonomy budget (I5). False means no call: this turn trims, a later one folds.
   */
  admitSummaryCall?: (run: ActiveRunSettings) => Promise<boolean>;
  /** Told what each real model call receives (not the API's preview of the next one), to keep with its run. */
  onModelInput?: (runId: string, record: ModelInputRecord) => void;
}

export interface PrepareOptions extends ModelInputOptions {
  /** Fold when the thread outgrew its share (a model call); false only describes. */
  fold?: boolean;
  /** The tools bound to the call: their definitions are input too, a fixed part like the system prompt. */
  tools?: readonly ToolSchema[];
}


/**
 * Fits every model call of a thread into the agent's context budget (I14): system
 * prompt, envelope, the running summary, the most recent messages that fit, and room for
 * the answer. Older messages are folded into the summary when the thread outgrows its
 * share — incrementally, the previous summary plus the newly folded messages — and
 * nothing is ever removed from the thread: fitting only chooses what this call sees.
 */
export class ContextWindow {
  readonly counter: TokenCounter;
  private readonly calibration = new UsageCalibration();
  /** Runs already warned that their system prompt was cut (a warning a run, not a call). */
  private readonly warnedRuns = new Set<string>();

  constructor(private readonly deps: ContextWindowDependencies) {
    this.counter = deps.counter ?? new TokenCounter();
  }

  /** The agent's budget: its setting → the server's → the model's window → 32,000. */
  async budget(run: Pick<ActiveRunSettings, 'userId' | 'agentId' | 'model'>, log: Logger = this.deps.logger): Promise<ContextBudget> {
    const agent = await this.deps.agents?.get(run.userId, run.agentId);
    let settings = contextSettingsSchema.parse({});
    try {
      settings = contextSettingsOf(agent?.settings ?? {});
    } catch (error) {
      log.error({ err: error, agentId: run.agentId }, 'invalid context settings; using the defaults');
    }
    let modelWindow: number | undefined;
    try {
      modelWindow = this.deps.models(run.model).profile?.maxInputTokens;
    } catch {
      modelWindow = undefined; // an unknown model fails at its call, with its own error
    }
    return resolveContextBudget({ settings, serverMaxTokens: this.deps.serverMaxTokens, modelWindow });
  }

  async prepare(state: ContextState, run: ActiveRunSettings, config: RunnableConfig, options: PrepareOptions = {}): Promise<PreparedCall> {
    const log = this.deps.logger.child({ threadId: run.threadId, runId: run.runId });
    const budget = await this.budget(run, log);
    const factor = this.calibration.factor(run.model);
    const inputLimit = Math.floor((budget.maxTokens - budget.answerTokens) / factor);
    const { fold: mayFold, tools = [], ...givenOptions } = options;
    const toolsTokens = this.counter.tools(tools);
    // Recalled memories take at most their share of the input, best-ranked first (I14).
    let inputOptions: ModelInputOptions = givenOptions.recalled ? { ...givenOptions, recalled: this.fitRecalled(givenOptions.recalled, Math.floor(inputLimit * MEMORY_SHARE), log) } : givenOptions;
    const givenPrompt = inputOptions.systemPrompt ?? run.systemPrompt;
    let basePrompt = this.fitSystemPrompt(givenPrompt, Math.floor(inputLimit * SYSTEM_PROMPT_SHARE), run, mayFold !== false, log);
    // Everything else the call's input carries (e.g. recalled memories) goes with the summary into the same builder.
    const inputWith = (summaryText: string | null): ModelInputOptions => ({ ...inputOptions, systemPrompt: withSummarySection(basePrompt, summaryText) });
    let summary = state.summary;
    // A summary written under a larger budget (context.maxTokens lowered since) is sent,
    // and read by the next fold, cut to its share of this one; the stored one is untouched.
    if (summary && this.counter.text(summary) > budget.summaryTokens) {
      log.info({ summaryTokens: this.counter.text(summary), share: budget.summaryTokens }, 'the conversation summary is over its share of the context budget; cut for this call');
      summary = this.cutSummary(summary, budget.summaryTokens);
    }
    let coverage = state.summaryCoverage;
    // Only what the summary does not cover is read (a long thread's folded past is not
    // walked on every call). Stale envelopes never reach the model (envelope-injection.ts);
    // they take no room either.
    const from = uncoveredStart(state.messages, coverage, log);
    const kept = state.messages.slice(from).filter((message) => !hasEnvelopeMarker(message));
    // Messages the summary already covered before this call, in the count coverage keeps.
    const priorCovered = from > 0 ? (coverage?.messageCount ?? 0) : 0;
    let covered = 0;
    let items = kept.slice(covered).map((message) => this.fitItem(message));
    let update: SummaryUpdate | undefined;

    const frame = (summaryText: string | null) => this.frame(kept, run, inputWith(summaryText));
    if (mayFold !== false) {
      const bare = frame(null);
      // The room the messages have once a full-size summary is in: the fold threshold does not move as the summary grows.
      const room = inputLimit - bare.systemTokens - bare.envelopeTokens - toolsTokens - budget.summaryTokens;
      const { summaryInput, foldableTokens } = this.summaryCallRoom(run, budget, summary);
      const count = planFold(items, { budget: room, foldAt: budget.foldAt, keepRecent: budget.keepRecent, maxFoldTokens: foldableTokens });
      if (count > 0) {
        const folded = kept.slice(covered, covered + count);
        try {
          const written = await this.fold(run, config, budget, summary, folded, summaryInput, log);
          const first = coverage?.firstMessageId ?? kept[0]?.id ?? folded[0]!.id ?? '';
          coverage = {
            firstMessageId: first,
            lastMessageId: folded.at(-1)!.id ?? '',
            messageCount: priorCovered + covered + count,
            folds: (coverage?.folds ?? 0) + 1,
            updatedAt: this.deps.clock.now().toISOString(),
            model: budget.summaryModel ?? run.model,
            tokens: this.counter.text(written),
          };
          summary = written;
          update = { summary, summaryCoverage: coverage };
          covered += count;
          items = items.slice(count);
          log.info({ folded: count, covered: priorCovered + covered, folds: coverage.folds, summaryTokens: coverage.tokens, model: coverage.model }, 'older messages folded into the conversation summary');
        } catch (error) {
          if (config.signal?.aborted) throw error;
          // The turn still gets its answer from the recent messages; the next turn tries the fold again.
          log.warn({ err: error, wouldFold: count }, 'conversation summary failed; trimming instead, the fold is retried on a later turn');
        }
      }
    }

    // Each fixed part has its share, but not their sum: with a small budget the prompt with
    // the server's rules, the memories, the summary and the tools together could leave the
    // messages nothing, or go over. The newest unit (the message this call answers, or a
    // tool step's results) keeps its room, up to MESSAGES_RESERVE of the input; past what
    // is left the fixed parts give way, the memories first, then the summary, then the
    // prompt; the tools cannot.
    const newest = unitsOf(items).at(-1);
    const fixedLimit = inputLimit - Math.min(Math.floor(inputLimit * MESSAGES_RESERVE), newest?.tokens ?? 0);
    // Framed once when everything fits (the usual call); again after each part gives way.
    let framed = frame(summary);
    const overOf = (parts: typeof framed) => parts.systemTokens + parts.envelopeTokens + toolsTokens - fixedLimit;
    const reframe = () => {
      framed = frame(summary);
      return overOf(framed);
    };
    let over = overOf(framed);
    if (over > 0) log.warn({ over, fixedLimit, toolsTokens }, 'the fixed parts of the call (system prompt, memories, summary, tools) are over their share of the context budget; the memories, then the summary, then the prompt give way');
    if (over > 0 && inputOptions.recalled && inputOptions.recalled.memories.length > 0) {
      const recalled = inputOptions.recalled;
      const memoryTokens = this.counter.text(memoryDataBlock(recalled.memories, recalled.foundBy));
      inputOptions = { ...inputOptions, recalled: this.fitRecalled(recalled, Math.max(0, memoryTokens - over), log) };
      over = reframe();
    }
    if (over > 0 && summary) {
      const left = this.counter.text(summary) - over;
      summary = left > 24 ? this.cutSummary(summary, left) : null;
      over = reframe();
    }
    if (over > 0) {
      basePrompt = this.fitSystemPrompt(givenPrompt, Math.max(0, this.counter.text(basePrompt) - over), run, mayFold !== false, log);
      reframe();
    }
    const fittedRecalled = inputOptions.recalled;
    const memories: ContextReport['memories'] = fittedRecalled
      ? {
          count: fittedRecalled.memories.length,
          tokens: this.counter.text(memoryDataBlock(fittedRecalled.memories, fittedRecalled.foundBy)),
          query: fittedRecalled.foundBy === null ? null : { source: fittedRecalled.foundBy as MemoryQuerySource },
        }
      : { count: 0, tokens: 0, query: null };
    const { systemTokens, envelopeTokens, systemText } = framed;
    const room = Math.max(0, inputLimit - systemTokens - envelopeTokens - toolsTokens);
    const humanFirst = needsHumanFirst(run.model);
    const recent = kept.slice(covered);
    let { window, cut, mediaReplaced } = this.chooseWindow(items, recent, room, humanFirst);
    let opening: 'none' | 'earlier' | 'placeholder' = 'none';
    if (humanFirst && window.length > 0 && window[0]!.getType() !== 'human') {
      // The provider needs a person's message first, and the window (its newest unit cut,
      // or a person's message too long to keep) opens with the agent's: the person's message
      // before it when it fits, else a short internal placeholder, room made for it.
      const used = window.reduce((sum, message) => sum + this.counter.message(message).tokens, 0);
      const firstAt = recent.indexOf(window[0]!) >= 0 ? recent.indexOf(window[0]!) : recent.findIndex((message) => message.id !== undefined && message.id === window[0]!.id);
      let earlier: BaseMessage | undefined;
      for (let index = firstAt - 1; index >= 0 && !earlier; index--) if (recent[index]!.getType() === 'human') earlier = recent[index];
      const placeholder = openingPlaceholder();
      const earlierTokens = earlier && firstAt >= 0 && recent.indexOf(earlier) === firstAt - 1 ? this.counter.message(earlier).tokens : undefined;
      if (earlier && earlierTokens !== undefined && (used + earlierTokens <= room || (cut.size > 0 && earlierTokens <= room / 4))) {
        // A cut unit fills the room: cut it to what the person's (short) message leaves.
        if (used + earlierTokens > room) ({ window, cut, mediaReplaced } = this.chooseWindow(items, recent, room - earlierTokens, humanFirst));
        opening = 'earlier';
        window = [earlier, ...window];
      } else {
        opening = 'placeholder';
        const reserve = this.counter.message(placeholder).tokens;
        if (used + reserve > room) ({ window, cut, mediaReplaced } = this.chooseWindow(items, recent, Math.max(0, room - reserve), humanFirst));
        if (window.length > 0 && window[0]!.getType() === 'human') opening = 'none';
        else window = [placeholder, ...window];
      }
      if (opening !== 'none') {
        cut = new Set([...cut].map((index) => index + 1));
        mediaReplaced = [false, ...mediaReplaced];
        log.debug({ opening }, 'the window opened with the agent\'s message; a person\'s message put first for the provider');
      }
    }
    const input = buildModelInput(window, run, inputWith(summary));
    const windowReport = window.map((message, index) => ({
      id: opening === 'placeholder' && index === 0 ? null : (message.id ?? null),
      type: message.getType(),
      tokens: this.counter.message(message).tokens,
      mediaReplaced: mediaReplaced[index] ?? false,
      cut: cut.has(index),
    }));
    const messageTokens = windowReport.reduce((sum, entry) => sum + entry.tokens, 0);
    const inputTokens = toolsTokens + input.messages.reduce((sum, message) => sum + this.counter.message(message).tokens, 0);
    const summaryTokens = summary ? this.counter.text(summary) : 0;
    const report: ContextReport = {
      budget: { maxTokens: budget.maxTokens, source: budget.source, answerTokens: budget.answerTokens, inputLimit, usageCorrection: factor },
      system: { text: systemText, tokens: systemTokens },
      envelope: { shown: input.envelope !== undefined, tokens: input.envelope !== undefined ? envelopeTokens : 0 },
      tools: { count: tools.length, tokens: toolsTokens },
      memories,
      summary: summary ? { text: summary, tokens: summaryTokens, coverage } : null,
      messages: { inThread: priorCovered + kept.length, summarized: priorCovered + covered, trimmed: recent.length - (window.length - (opening === 'placeholder' ? 1 : 0)), window: windowReport, tokens: messageTokens },
      inputTokens,
    };
    if (mayFold !== false) this.deps.onModelInput?.(run.runId, modelInputRecordOf(report, this.deps.clock.now().toISOString(), run.model));
    if (inputTokens > inputLimit) log.error({ inputTokens, inputLimit }, 'model input over the context budget');
    log.debug({ inputTokens, inputLimit, maxTokens: budget.maxTokens, window: window.length, summarized: priorCovered + covered, trimmed: report.messages.trimmed }, 'model context fitted');
    return {
      messages: input.messages,
      envelope: input.envelope,
      update,
      report,
      observe: (reply) => {
        const reported = AIMessage.isInstance(reply) ? reply.usage_metadata?.input_tokens : undefined;
        this.calibration.observe(run.model, inputTokens, reported);
      },
    };
  }

  /** The messages that fit `room`: the newest units whole, or the newest unit cut as one. */
  private chooseWindow(items: readonly FitItem[], recent: readonly BaseMessage[], room: number, humanFirst: boolean): { window: BaseMessage[]; cut: Set<number>; mediaReplaced: boolean[] } {
    const fit = fitWindow(items, { budget: room, humanFirst });
    if (fit.newestFits) {
      const mediaReplaced = recent.slice(fit.start).map((_message, offset) => fit.withoutMedia.includes(fit.start + offset));
      return { window: recent.slice(fit.start).map((message, offset) => (mediaReplaced[offset] ? withoutMedia(message) : message)), cut: new Set(), mediaReplaced };
    }
    // Not even the newest unit fits: its text is cut, with a mark, rather than the budget
    // broken. A tool call and its results are cut as one unit (never a lone result, which
    // providers reject, nor a call without its results); a result with no call is never sent.
    const newest = unitsOf(items).at(-1);
    const { window, cut } = newest && !newest.orphanTool ? this.shortenUnit(recent.slice(newest.start, newest.end), room) : { window: [], cut: new Set<number>() };
    return { window, cut, mediaReplaced: window.map(() => false) };
  }

  /**
   * Bound a model call that reads no thread history — a planner decision or the
   * overlord's, whose input is the system prompt and one JSON context message — to the
   * agent's budget: over it, the context message (the last non-envelope human message)
   * is cut, marked, to what fits. Everything else is sent as built. The decision's output
   * schema (`output`), which the provider receives as a tool definition, is input too: a
   * fixed part, like a chat call's tools. So are the messages `after` the built ones — a
   * retried decision's corrections (structured-decision.ts) — sent after them as they are.
   */
  async bound(messages: readonly BaseMessage[], owner: Pick<ActiveRunSettings, 'userId' | 'agentId' | 'model'>, output?: DecisionOutput, after: readonly BaseMessage[] = []): Promise<BaseMessage[]> {
    const budget = await this.budget(owner);
    const limit = Math.floor((budget.maxTokens - budget.answerTokens) / this.calibration.factor(owner.model));
    const counts = messages.map((message) => this.counter.message(message).tokens);
    const schemaTokens = output ? this.counter.outputSchema(output.name, output.schema) : 0;
    const afterTokens = after.reduce((sum, message) => sum + this.counter.message(message).tokens, 0);
    const total = schemaTokens + afterTokens + counts.reduce((sum, count) => sum + count, 0);
    if (total <= limit) return [...messages, ...after];
    let index = messages.length - 1;
    while (index >= 0 && (messages[index]!.getType() !== 'human' || hasEnvelopeMarker(messages[index]!))) index -= 1;
    if (index < 0) return [...messages, ...after];
    const room = Math.max(0, limit - (total - counts[index]!));
    this.deps.logger.warn({ agentId: owner.agentId, tokens: total, limit, contextTokens: counts[index], schemaTokens, afterTokens, room }, 'decision input over the context budget; its context is cut to fit');
    return [...messages.map((message, position) => (position === index ? this.shorten(message, room) : message)), ...after];
  }

  /**
   * What one summary call can read: the summary model's own input — the agent's budget or
   * the summary model's window where its profile knows a smaller one, less the summary it
   * answers with, in its own usage correction — and, of that, the message tokens a fold
   * may take once the instruction and the previous summary are in (I14: a fold never
   * covers messages its call could not read; the rest folds on a later turn).
   */
  private summaryCallRoom(run: ActiveRunSettings, budget: ContextBudget, previous: string | null): { summaryInput: number; foldableTokens: number } {
    const spec = budget.summaryModel ?? run.model;
    let window: number | undefined;
    try {
      window = this.deps.models(spec).profile?.maxInputTokens;
    } catch {
      window = undefined; // an unknown model fails at its call, with its own error
    }
    const limit = window !== undefined && Number.isFinite(window) && window > 0 ? Math.min(budget.maxTokens, Math.floor(window)) : budget.maxTokens;
    const summaryInput = Math.floor((limit - budget.summaryTokens) / this.calibration.factor(spec));
    const framing = this.counter.text(summaryInstruction(budget.summaryTokens)) + this.counter.text(summaryRequestText(previous, [])) + 64;
    return { summaryInput, foldableTokens: Math.max(0, summaryInput - framing) };
  }

  private async fold(
    run: ActiveRunSettings,
    config: RunnableConfig,
    budget: ContextBudget,
    previous: string | null,
    folded: readonly BaseMessage[],
    maxInputTokens: number,
    log: Logger,
  ): Promise<string> {
    if (BUDGETED_TRIGGERS.has(run.trigger) && this.deps.admitSummaryCall && !(await this.deps.admitSummaryCall(run))) {
      throw new Error('the autonomy model-call budget is spent');
    }
    const model = budget.summaryModel ?? run.model;
    log.debug({ model, folded: folded.length }, 'writing the conversation summary');
    return summarizeMessages(this.deps.models, this.counter, { model, previous, folded, summaryTokens: budget.summaryTokens, maxInputTokens }, config);
  }

  /** A summary cut to `tokens` for this call, marked with an ellipsis (the stored one is untouched). */
  private cutSummary(summary: string, tokens: number): string {
    return `${this.counter.truncate(summary, tokens - 4)}…`;
  }

  /**
   * The system prompt as this call sends it: whole while it takes at most its share of the
   * input, else cut to it with a visible mark (a budget lowered, or a model's smaller
   * window, under a long prompt; agents whose own budget it exceeds are refused at the
   * API). Warned once per run; the API's preview (`warn` false) does not warn.
   */
  private fitSystemPrompt(prompt: string, share: number, run: ActiveRunSettings, warn: boolean, log: Logger): string {
    const tokens = this.counter.text(prompt);
    if (tokens <= share) return prompt;
    if (warn && !this.warnedRuns.has(run.runId)) {
      if (this.warnedRuns.size >= 1000) this.warnedRuns.delete(this.warnedRuns.values().next().value!);
      this.warnedRuns.add(run.runId);
      log.warn({ agentId: run.agentId, systemPromptTokens: tokens, share }, 'the system prompt is over its share of the context budget; cut to fit, with a mark');
    }
    return `${this.counter.truncate(prompt, Math.max(0, share - this.counter.text(SYSTEM_PROMPT_CUT_MARK) - 2))}${SYSTEM_PROMPT_CUT_MARK}`;
  }

  /**
   * The recalled memories that fit `room` tokens as their data block: best-ranked first,
   * the rest left out; when not even the first fits, its text is cut, marked.
   */
  private fitRecalled(recalled: NonNullable<ModelInputOptions['recalled']>, room: number, log: Logger): NonNullable<ModelInputOptions['recalled']> {
    const { memories, foundBy } = recalled;
    const tokens = (list: readonly RecalledMemoryData[]) => this.counter.text(memoryDataBlock(list, foundBy));
    if (memories.length === 0 || tokens(memories) <= room) return recalled;
    const kept: RecalledMemoryData[] = [];
    for (const memory of memories) {
      if (tokens([...kept, memory]) > room) break;
      kept.push(memory);
    }
    if (kept.length === 0) {
      const first = memories[0]!;
      const mark = ' [… cut to fit the context budget]';
      // JSON quoting can only lengthen the text: cut it to the room the empty entry leaves.
      const left = room - tokens([{ ...first, content: mark }]);
      if (left > 20) kept.push({ ...first, content: `${this.counter.truncate(first.content, left)}${mark}` });
      while (kept.length > 0 && tokens(kept) > room) kept[0] = { ...kept[0]!, content: `${this.counter.truncate(kept[0]!.content.slice(0, -mark.length), Math.floor(this.counter.text(kept[0]!.content) * 0.9))}${mark}` };
    }
    log.warn({ recalled: memories.length, kept: kept.length, cut: kept.length === 1 && kept[0]!.content !== memories[0]!.content, room }, 'recalled memories over their share of the context budget; the lowest-ranked left out');
    return { memories: kept, foundBy };
  }

  /** The system prompt and envelope of this call, counted (the envelope only when the trigger shows it). */
  private frame(kept: readonly BaseMessage[], run: ActiveRunSettings, options: ModelInputOptions) {
    let task: BaseMessage | undefined;
    for (let index = kept.length - 1; index >= 0 && !task; index--) if (kept[index]!.getType() === 'human') task = kept[index];
    const probe = buildModelInput(task ? [task] : [], run, options);
    const system = probe.messages[0]!;
    const envelope = probe.envelope ? probe.messages.find((message) => hasEnvelopeMarker(message)) : undefined;
    return {
      systemText: typeof system.content === 'string' ? system.content : '',
      systemTokens: this.counter.message(system).tokens,
      envelopeTokens: envelope ? this.counter.message(envelope).tokens : 0,
    };
  }

  private fitItem(message: BaseMessage): FitItem {
    const counted = this.counter.message(message);
    const toolCallIds = AIMessage.isInstance(message) ? (message.tool_calls ?? []).map((call) => call.id ?? '') : undefined;
    return { kind: kindOf(message), tokens: counted.tokens, tokensWithoutMedia: counted.tokensWithoutMedia, toolCallIds };
  }

  /**
   * One unit — a message, or an assistant's tool call with all its results — cut to
   * `room` tokens as a whole. The call keeps its tool calls (its text is cut only when it
   * takes more than half the room); the results share what is left, the short ones kept
   * whole and the longer ones cut to an even share.
   */
  private shortenUnit(messages: readonly BaseMessage[], room: number): { window: BaseMessage[]; cut: Set<number> } {
    if (messages.length === 1) return { window: [this.shorten(messages[0]!, room)], cut: new Set([0]) };
    const cut = new Set<number>();
    let call = messages[0]!;
    if (this.counter.message(call).tokens > room / 2 && textOf(call.content).length > 0) {
      call = this.shorten(call, Math.floor(room / 2));
      cut.add(0);
    }
    const results = messages.slice(1);
    let left = Math.max(0, room - this.counter.message(call).tokens);
    // Water-filling: the smallest results first, each up to an even share of what is left.
    const order = results.map((message, index) => ({ index, tokens: this.counter.message(message).tokens })).sort((a, b) => a.tokens - b.tokens);
    const shares = new Map<number, number>();
    for (const [position, entry] of order.entries()) {
      const share = Math.floor(left / (order.length - position));
      shares.set(entry.index, Math.min(entry.tokens, share));
      left -= Math.min(entry.tokens, share);
    }
    const window = [
      call,
      ...results.map((message, index) => {
        const share = shares.get(index)!;
        if (this.counter.message(message).tokens <= share) return message;
        cut.add(index + 1);
        return this.shorten(message, share);
      }),
    ];
    return { window, cut };
  }

  /** A copy of the message cut to `room` tokens, media replaced, marked as cut. */
  private shorten(message: BaseMessage, room: number): BaseMessage {
    const light = withoutMedia(message);
    const overhead = this.counter.message(light).tokens - this.counter.text(textOf(light.content));
    const mark = '\n[… cut to fit the context budget]';
    const text = this.counter.truncate(textOf(light.content), Math.max(0, room - overhead - this.counter.text(mark) - 2));
    return copyWithContent(light, `${text}${mark}`);
  }
}

/** A structured decision's answer: its name and output schema, bound as a tool by withStructuredOutput. */
export interface DecisionOutput {
  name: string;
  schema: InteropZodType;
}

export const SYSTEM_PROMPT_CUT_MARK = '\n[… system prompt cut to fit the context budget]';

/** The most of a call's input recalled memories may take. */
const MEMORY_SHARE = 0.2;
/** The most of a call's input its newest unit is sure of, whatever the fixed parts (system prompt with its rules, memories, summary, tools) take. */
const MESSAGES_RESERVE = 0.25;

/** The index of the first message the summary does not cover (searched from the end: the uncovered part is the short one). */
function uncoveredStart(messages: readonly BaseMessage[], coverage: SummaryCoverage | null, log: Logger): number {
  if (!coverage) return 0;
  for (let index = messages.length - 1; index >= 0; index--) if (messages[index]!.id === coverage.lastMessageId) return index + 1;
  // The covered message was replaced or removed: show every message again beside the summary rather than lose one.
  log.warn({ lastMessageId: coverage.lastMessageId }, 'the summary covers a message no longer in the thread; fitting from the start');
  return 0;
}

function kindOf(message: BaseMessage): FitKind {
  const type: string = message.getType();
  return type === 'human' || type === 'ai' || type === 'tool' || type === 'system' ? type : 'other';
}

/** Opens a window that would start with the agent's message, for a provider that needs a person's first: internal (I2), never stored. */
function openingPlaceholder(): HumanMessage {
  return new HumanMessage({ content: '[Earlier conversation left out to fit the context budget.]', additional_kwargs: { synthetic: true } });
}

/** Anthropic's API wants the conversation to open with the user's turn. */
function needsHumanFirst(model: string): boolean {
  return model.startsWith('anthropic:');
}

function withoutMedia(message: BaseMessage): BaseMessage {
  if (!Array.isArray(message.content) || !message.content.some(isMediaBlock)) return message;
  return copyWithContent(message, message.content.map((block) => (isMediaBlock(block) ? { type: 'text', text: MEDIA_PLACEHOLDER } : block)) as BaseMessage['content']);
}

/** The same message (same id, metadata, tool calls) with other content: for this call only, never stored. */
function copyWithContent(message: BaseMessage, content: BaseMessage['content']): BaseMessage {
  const fields = { content, id: message.id, name: message.name, additional_kwargs: message.additional_kwargs, response_metadata: message.response_metadata };
  if (ToolMessage.isInstance(message)) return new ToolMessage({ ...fields, tool_call_id: message.tool_call_id });
  if (AIMessage.isInstance(message)) return new AIMessage({ ...fields, tool_calls: message.tool_calls ?? [] });
  if (message.getType() === 'system') return new SystemMessage(fields);
  return new HumanMessage(fields);
}
