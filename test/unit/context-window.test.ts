import { describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { ContextWindow, type ContextState } from '../../src/agent/context/context-window.js';
import { MEDIA_PLACEHOLDER, TokenCounter } from '../../src/agent/context/token-counter.js';
import { runConfig, runSettingsOf } from '../../src/agent/run-settings.js';
import { RecordingDemoModel } from '../helpers/recording-demo-model.js';
import { captureLogs } from '../helpers/log-capture.js';

const counter = new TokenCounter();
const clock = { now: () => new Date('2026-11-23T12:00:00Z') };
const words = (count: number, tag: string) => `${tag} ${'lorem ipsum dolor sit amet '.repeat(Math.ceil(count / 5))}`.trim();

function setup(options: { maxTokens?: number; model?: string; trigger?: 'user' | 'autonomy'; admit?: () => Promise<boolean> } = {}) {
  const model = new RecordingDemoModel();
  const capture = captureLogs('debug');
  const window = new ContextWindow({
    models: () => model,
    logger: capture.logger,
    clock,
    counter,
    serverMaxTokens: options.maxTokens ?? 2000,
    ...(options.admit ? { admitSummaryCall: options.admit } : {}),
  });
  const config = runConfig({ runId: randomUUID(), threadId: 't1', userId: 'u1', agentId: 'a1', trigger: options.trigger ?? 'user', model: options.model ?? 'demo', systemPrompt: 'You are kind.' });
  const run = runSettingsOf(config);
  return { model, window, config, run, logs: capture.lines };
}

const tokensOf = (messages: readonly BaseMessage[]) => messages.reduce((sum, message) => sum + counter.message(message).tokens, 0);
const human = (text: string) => new HumanMessage({ id: randomUUID(), content: text });
const ai = (text: string) => new AIMessage({ id: randomUUID(), content: text });

describe('I14: the context window of one model call', () => {
  it('never splits a tool call from its results and never opens with a tool result, at any budget', async () => {
    const messages: BaseMessage[] = [];
    for (let index = 0; index < 12; index++) {
      messages.push(human(words(40, `question ${index}`)));
      const callId = `call_${index}`;
      messages.push(new AIMessage({ id: randomUUID(), content: '', tool_calls: [{ id: callId, name: 'lookup', args: { q: index } }] }));
      messages.push(new ToolMessage({ id: randomUUID(), tool_call_id: callId, content: words(60, `result ${index}`) }));
      messages.push(ai(words(20, `answer ${index}`)));
    }
    for (const maxTokens of [1000, 1300, 1700, 2200, 3000]) {
      const { window, config, run } = setup({ maxTokens });
      const prepared = await window.prepare({ messages, summary: null, summaryCoverage: null }, run, config, { fold: false });
      const sent = prepared.messages.slice(1);
      expect(sent[0]!.getType(), `budget ${maxTokens}`).not.toBe('tool');
      for (const [index, message] of sent.entries()) {
        if (ToolMessage.isInstance(message)) {
          const caller = sent[index - 1];
          expect(AIMessage.isInstance(caller) && caller.tool_calls?.[0]?.id === message.tool_call_id, `budget ${maxTokens}: result ${message.tool_call_id} has its call`).toBe(true);
        }
        if (AIMessage.isInstance(message) && message.tool_calls?.length) expect(ToolMessage.isInstance(sent[index + 1])).toBe(true);
      }
      expect(tokensOf(prepared.messages)).toBeLessThanOrEqual(prepared.report.budget.inputLimit);
    }
  });

  it('I14: a newest tool unit that does not fit is cut as a whole: the call stays with its results, never a lone tool result', async () => {
    const { window, config, run } = setup({ maxTokens: 1000 });
    const callId = 'call_big';
    const messages = [
      human('look it up'),
      new AIMessage({ id: randomUUID(), content: '', tool_calls: [{ id: callId, name: 'lookup', args: { q: 1 } }, { id: 'call_small', name: 'lookup', args: { q: 2 } }] }),
      new ToolMessage({ id: randomUUID(), tool_call_id: callId, content: words(3000, 'result') }),
      new ToolMessage({ id: randomUUID(), tool_call_id: 'call_small', content: 'short result' }),
    ];
    const prepared = await window.prepare({ messages, summary: null, summaryCoverage: null }, run, config, { fold: false });
    const sent = prepared.messages.slice(1);
    expect(sent.map((message) => message.getType())).toEqual(['ai', 'tool', 'tool']);
    expect((sent[0] as AIMessage).tool_calls?.map((call) => call.id)).toEqual([callId, 'call_small']);
    expect(sent.slice(1).map((message) => (message as ToolMessage).tool_call_id)).toEqual([callId, 'call_small']);
    expect(String(sent[1]!.content)).toMatch(/\[… cut to fit the context budget\]$/);
    expect(sent[2]!.content).toBe('short result');
    expect(prepared.report.messages.window.map((entry) => entry.cut)).toEqual([false, true, false]);
    expect(tokensOf(prepared.messages)).toBeLessThanOrEqual(prepared.report.budget.inputLimit);
  });

  it('I14: recalled memories are fitted to the budget: the best-ranked kept, the rest left out, an oversized one cut', async () => {
    const { window, config, run } = setup({ maxTokens: 2000 });
    const messages = [human('hello, what do you remember?')];
    const memories = Array.from({ length: 5 }, (_, index) => ({ id: `m${index}`, content: words(600, `memory ${index}`) }));
    const prepared = await window.prepare({ messages, summary: null, summaryCoverage: null }, run, config, { fold: false, recalled: { memories, foundBy: 'current_message' } });
    expect(tokensOf(prepared.messages)).toBeLessThanOrEqual(prepared.report.budget.inputLimit);
    const system = String(prepared.messages[0]!.content);
    expect(system).toContain('"memory_id":"m0"'); // the best-ranked memory stays, cut to fit
    expect(system).not.toContain('"memory_id":"m4"');
    expect(prepared.messages.at(-1)!.content).toBe('hello, what do you remember?');
    // Memories that fit are sent whole.
    const few = memories.slice(0, 2).map((memory) => ({ ...memory, content: words(20, memory.id) }));
    const roomy = await window.prepare({ messages, summary: null, summaryCoverage: null }, run, config, { fold: false, recalled: { memories: few, foundBy: 'current_message' } });
    for (const memory of few) expect(String(roomy.messages[0]!.content)).toContain(memory.content);
  });

  it('I14: a summary written under a larger budget is cut to its share of a smaller one, in a call that folds or not', async () => {
    const { model, window, config, run } = setup({ maxTokens: 1000 });
    const messages = [human('hello'), ai('hi'), human(words(300, 'plans')), ai(words(300, 'answer')), human('and now?')];
    const summary = words(1900, 'summary written when the budget was 16,000');
    const state: ContextState = { messages, summary, summaryCoverage: { firstMessageId: 'gone-1', lastMessageId: 'gone-2', messageCount: 40, folds: 3, updatedAt: '2026-11-01T00:00:00.000Z', model: 'demo', tokens: counter.text(summary) } };
    const described = await window.prepare(state, run, config, { fold: false });
    expect(tokensOf(described.messages)).toBeLessThanOrEqual(described.report.budget.inputLimit);
    expect(described.report.summary!.tokens).toBeLessThanOrEqual(200);
    expect(String(described.messages[0]!.content)).toContain('summary written when the budget was 16,000');
    expect(described.messages.at(-1)!.content).toBe('and now?');
    // A call whose fold fails sends the stored summary too: cut the same way.
    model.failSummaries = 1;
    const called = await window.prepare(state, run, config);
    expect(model.summaries()).toHaveLength(1);
    expect(called.update).toBeUndefined();
    expect(tokensOf(called.messages)).toBeLessThanOrEqual(called.report.budget.inputLimit);
    // The stored summary is untouched: the cut is for the call only.
    expect(state.summary).toBe(summary);
  });

  it("I14: a fold takes no more than the summary model's own window can read; the rest folds on a later turn", async () => {
    // The agent's budget is 32,000; its summary model reads at most 4,000 tokens.
    class SmallWindowModel extends RecordingDemoModel {
      override get profile() {
        return { maxInputTokens: 4000 };
      }
    }
    const small = new SmallWindowModel();
    const capture = captureLogs('debug');
    const window = new ContextWindow({
      models: (spec) => (spec === 'openai:small' ? small : new RecordingDemoModel()),
      logger: capture.logger,
      clock,
      counter,
      serverMaxTokens: 32_000,
      agents: { get: async () => ({ settings: { context: { summaryModel: 'openai:small' } } }) as never },
    });
    const config = runConfig({ runId: randomUUID(), threadId: 't1', userId: 'u1', agentId: 'a1', trigger: 'user', model: 'demo', systemPrompt: 'You are kind.' });
    const run = runSettingsOf(config);
    const messages = Array.from({ length: 120 }, (_, index) => (index % 2 ? ai(words(200, `a${index}`)) : human(words(200, `h${index}`))));
    const first = await window.prepare({ messages, summary: null, summaryCoverage: null }, run, config);
    const call = small.summaries()[0]!;
    // Its input leaves the summary (the call's answer) its room in the summary model's window.
    expect(tokensOf(call.messages)).toBeLessThanOrEqual(4000 - first.report.summary!.coverage!.tokens);
    expect(tokensOf(call.messages)).toBeLessThanOrEqual(2000);
    // Every folded message was read whole: nothing covered that the summary call did not see.
    expect(String(call.messages[1]!.content)).not.toContain('[… cut to fit]');
    const covered = first.update!.summaryCoverage.messageCount;
    expect(String(call.messages[1]!.content)).toContain(`a${covered - 1} `);
    // The rest folds on the next turn, from where this fold stopped.
    const second = await window.prepare({ messages, ...first.update! }, run, config);
    expect(small.summaries()).toHaveLength(2);
    expect(second.update!.summaryCoverage.messageCount).toBeGreaterThan(covered);
  });

  it("keeps a person's message first for Anthropic models", async () => {
    const messages = [human(words(200, 'old')), ai(words(200, 'a1')), ai(words(200, 'a2')), human(words(30, 'new')), ai(words(30, 'a3')), human('last')];
    const open = setup({ maxTokens: 1000 });
    const openai = await open.window.prepare({ messages, summary: null, summaryCoverage: null }, open.run, open.config, { fold: false });
    const anthropic = setup({ maxTokens: 1000, model: 'anthropic:claude-test' });
    const fitted = await anthropic.window.prepare({ messages, summary: null, summaryCoverage: null }, anthropic.run, anthropic.config, { fold: false });
    expect(fitted.messages[1]!.getType()).toBe('human');
    expect(openai.messages.length).toBeGreaterThanOrEqual(fitted.messages.length);
  });

  it("I14: for Anthropic a window whose newest tool unit is cut still opens with a person's message: the one before it when it fits, else an internal placeholder", async () => {
    const toolUnit = (result: string) => [
      new AIMessage({ id: randomUUID(), content: '', tool_calls: [{ id: 'call_dig', name: 'lookup', args: { q: 1 } }] }),
      new ToolMessage({ id: randomUUID(), tool_call_id: 'call_dig', content: result }),
    ];
    const cases = [
      { name: 'newest unit cut, the person fits', messages: [human('look it up'), ...toolUnit(words(3000, 'result'))], opening: 'look it up' },
      { name: 'newest unit cut, the person too long', messages: [human(words(3000, 'question')), ...toolUnit(words(3000, 'result'))], opening: null },
      { name: 'the unit fits, the person too long', messages: [human(words(3000, 'question')), ...toolUnit('short result')], opening: null },
    ];
    for (const { name, messages, opening } of cases) {
      const { window, config, run } = setup({ maxTokens: 1000, model: 'anthropic:claude-test' });
      const prepared = await window.prepare({ messages, summary: null, summaryCoverage: null }, run, config, { fold: false });
      const sent = prepared.messages.slice(1);
      expect(sent.map((message) => message.getType()), name).toEqual(['human', 'ai', 'tool']);
      if (opening !== null) expect(sent[0]!.content, name).toBe(opening);
      else {
        expect(sent[0]!.additional_kwargs.synthetic, name).toBe(true);
        expect(String(sent[0]!.content), name).toMatch(/left out to fit the context budget/);
        expect(prepared.report.messages.window[0]!.id, name).toBeNull();
      }
      expect((sent[1] as AIMessage).tool_calls?.[0]?.id, name).toBe('call_dig');
      expect(tokensOf(prepared.messages), name).toBeLessThanOrEqual(prepared.report.budget.inputLimit);
      expect(prepared.report.inputTokens, name).toBeLessThanOrEqual(prepared.report.budget.inputLimit);
    }
  });

  it('keeps an image whole when it fits, else replaces it with a marked placeholder (the stored message is untouched)', async () => {
    const picture = new HumanMessage({ id: randomUUID(), content: [{ type: 'text', text: 'what is this?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] });
    const messages = [picture, ai('a cat'), human('and its name?')];
    const roomy = setup({ maxTokens: 8000 });
    const whole = await roomy.window.prepare({ messages, summary: null, summaryCoverage: null }, roomy.run, roomy.config, { fold: false });
    expect(whole.messages[1]!.content).toEqual(picture.content);
    const tight = setup({ maxTokens: 1000 });
    const light = await tight.window.prepare({ messages, summary: null, summaryCoverage: null }, tight.run, tight.config, { fold: false });
    expect(light.messages[1]!.content).toEqual([{ type: 'text', text: 'what is this?' }, { type: 'text', text: MEDIA_PLACEHOLDER }]);
    expect(light.messages[1]!.id).toBe(picture.id);
    expect(light.report.messages.window[0]).toMatchObject({ mediaReplaced: true });
    expect((picture.content as unknown[])[1]).toMatchObject({ type: 'image_url' });
  });

  it('cuts a newest message that alone exceeds the budget, marked, rather than break the budget', async () => {
    const { window, config, run } = setup({ maxTokens: 1000 });
    const huge = human(words(3000, 'paste'));
    const prepared = await window.prepare({ messages: [huge], summary: null, summaryCoverage: null }, run, config, { fold: false });
    expect(String(prepared.messages[1]!.content)).toMatch(/\[… cut to fit the context budget\]$/);
    expect(prepared.report.messages.window[0]).toMatchObject({ cut: true });
    expect(tokensOf(prepared.messages)).toBeLessThanOrEqual(prepared.report.budget.inputLimit);
  });

  it('I14: a system prompt alone over the budget (a server budget lowered under it) is cut to its share with a mark, warned once per run', async () => {
    const { window, config, run, logs } = setup({ maxTokens: 1000 });
    const prompt = 'Always answer in the voice of a careful gardener who explains every step. '.repeat(260);
    const long = { ...run, systemPrompt: prompt };
    const messages = [human('How deep do I plant garlic?')];
    const first = await window.prepare({ messages, summary: null, summaryCoverage: null }, long, config);
    const second = await window.prepare({ messages: [...messages, ai('Five centimetres.'), human('And tulips?')], summary: null, summaryCoverage: null }, long, config);
    for (const prepared of [first, second]) {
      expect(prepared.report.inputTokens).toBeLessThanOrEqual(prepared.report.budget.inputLimit);
      expect(tokensOf(prepared.messages)).toBeLessThanOrEqual(prepared.report.budget.inputLimit);
      expect(prepared.report.system.text).toContain('[… system prompt cut to fit the context budget]');
      const mark = '[… system prompt cut to fit the context budget]';
      const cutPrompt = prepared.report.system.text.slice(0, prepared.report.system.text.indexOf(mark) + mark.length);
      expect(prompt.startsWith(cutPrompt.slice(0, 200))).toBe(true);
      expect(counter.text(cutPrompt)).toBeLessThanOrEqual(prepared.report.budget.inputLimit / 2);
      // The person's message is sent whole.
      expect(prepared.messages.at(-1)!.content).toBe(prepared === first ? 'How deep do I plant garlic?' : 'And tulips?');
    }
    expect(logs.filter((line) => line.msg === 'the system prompt is over its share of the context budget; cut to fit, with a mark')).toHaveLength(1);
  });

  it("I14: the provider's reported input usage corrects later counts", async () => {
    const { window, config, run } = setup({ maxTokens: 2000 });
    const state: ContextState = { messages: Array.from({ length: 30 }, (_, index) => (index % 2 ? ai(words(40, `a${index}`)) : human(words(40, `h${index}`)))), summary: null, summaryCoverage: null };
    const first = await window.prepare(state, run, config, { fold: false });
    // The provider counted half again as many tokens as we did.
    first.observe(new AIMessage({ content: 'ok', usage_metadata: { input_tokens: Math.round(first.report.inputTokens * 1.5), output_tokens: 1, total_tokens: 0 } }));
    const second = await window.prepare(state, run, config, { fold: false });
    expect(second.report.budget.usageCorrection).toBeCloseTo(1.5, 2);
    expect(second.report.inputTokens * second.report.budget.usageCorrection).toBeLessThanOrEqual(2000 - second.report.budget.answerTokens);
    expect(second.messages.length).toBeLessThan(first.messages.length);
  });

  it('I5: an autonomous run whose budget is spent makes no summary call: it trims, and folds once the budget allows', async () => {
    let allowed = false;
    const { model, window, config, run, logs } = setup({ maxTokens: 2000, trigger: 'autonomy', admit: async () => allowed });
    const state: ContextState = { messages: Array.from({ length: 30 }, (_, index) => (index % 2 ? ai(words(40, `a${index}`)) : human(words(40, `h${index}`)))), summary: null, summaryCoverage: null };
    const refused = await window.prepare(state, run, config);
    expect(model.summaries()).toHaveLength(0);
    expect(refused.update).toBeUndefined();
    expect(refused.report.messages.trimmed).toBeGreaterThan(0);
    expect(logs.some((line) => line.msg.startsWith('conversation summary failed') && line.level === 40)).toBe(true);
    allowed = true;
    const folded = await window.prepare(state, run, config);
    expect(model.summaries()).toHaveLength(1);
    expect(folded.update?.summaryCoverage).toMatchObject({ firstMessageId: state.messages[0]!.id, messageCount: expect.any(Number), folds: 1, model: 'demo', updatedAt: '2026-11-23T12:00:00.000Z' });
    expect(folded.update!.summary).toMatch(/^\[demo summary\]/);
  });
});

describe('the demo model writes a deterministic, bounded summary', () => {
  it('counts what it folded, keeps the latest of what the person said, and stays bounded however long the thread', async () => {
    const { DemoChatModel } = await import('../../src/adapters/llm/demo-chat-model.js');
    const { summaryRequestText } = await import('../../src/domain/context/conversation-summary.js');
    let summary: string | null = null;
    for (let fold = 0; fold < 50; fold++) {
      const lines = Array.from({ length: 10 }, (_, index) => (index % 2 ? { role: 'assistant' as const, text: 'ok' } : { role: 'person' as const, text: `fact ${fold * 10 + index}` }));
      const next = DemoChatModel.summaryFor(summaryRequestText(summary, lines));
      expect(DemoChatModel.summaryFor(summaryRequestText(summary, lines))).toBe(next);
      summary = next;
    }
    expect(summary).toMatch(/^\[demo summary\] 500 messages folded\. The person said: /);
    expect(summary).toContain('"fact 498"');
    expect(summary).not.toContain('"fact 0"');
    expect(counter.text(summary!)).toBeLessThan(200);
  });
});

describe('the fixed parts of a call together', () => {
  it('I14: at the smallest budget, a long prompt, memories, a summary and tools together stay within the input limit, the messages keeping their room', async () => {
    const model = new RecordingDemoModel();
    const logs = captureLogs('debug');
    const window = new ContextWindow({ models: () => model, logger: logs.logger, clock: { now: () => new Date() }, counter, serverMaxTokens: 1000 });
    const config = runConfig({ runId: randomUUID(), threadId: 't1', userId: 'u1', agentId: 'a1', trigger: 'user', model: 'demo', systemPrompt: words(3000, 'prompt') });
    const run = runSettingsOf(config);
    const memories = Array.from({ length: 5 }, (_, index) => ({ id: `m${index}`, content: words(600, `memory ${index}`) }));
    const tools = Array.from({ length: 6 }, (_, index) => ({ name: `tool_${index}`, description: words(20, 'does a thing'), parameters: { type: 'object', properties: { q: { type: 'string', description: 'what to look up' } }, required: ['q'] } }));
    const summary = words(1900, 'summary');
    const coverage = { firstMessageId: 'gone-1', lastMessageId: 'gone-2', messageCount: 40, folds: 3, updatedAt: '2026-11-01T00:00:00.000Z', model: 'demo', tokens: counter.text(summary) };
    const question = new HumanMessage({ id: randomUUID(), content: 'What did we decide about the garden shed, and when do the roses need pruning?' });
    const prepared = await window.prepare({ messages: [question], summary, summaryCoverage: coverage }, run, config, { fold: false, tools, recalled: { memories, foundBy: 'current_message' } });
    const { report } = prepared;
    expect(report.inputTokens).toBeLessThanOrEqual(report.budget.inputLimit);
    // The person's message is sent whole: the fixed parts gave way, not the message.
    expect(report.messages.window).toEqual([expect.objectContaining({ id: question.id, cut: false })]);
    expect(logs.lines.some((line) => String(line.msg).startsWith('the fixed parts of the call'))).toBe(true);
  });
});
