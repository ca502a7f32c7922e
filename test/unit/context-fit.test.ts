import { describe, expect, it } from 'vitest';
import { fitWindow, planFold, unitsOf, type FitItem } from '../../src/domain/context/fit-window.js';
import { DEFAULT_CONTEXT_TOKENS, contextSettingsSchema, resolveContextBudget } from '../../src/domain/context/context-settings.js';

const human = (tokens = 10): FitItem => ({ kind: 'human', tokens });
const ai = (tokens = 10): FitItem => ({ kind: 'ai', tokens });
const call = (tokens = 10, ids = ['c1']): FitItem => ({ kind: 'ai', tokens, toolCallIds: ids });
const tool = (tokens = 10): FitItem => ({ kind: 'tool', tokens });
const image = (tokens = 1000, light = 20): FitItem => ({ kind: 'human', tokens, tokensWithoutMedia: light });

describe('I14: fitting the most recent messages into the budget', () => {
  it('keeps the newest messages that fit, and counts them', () => {
    const items = [human(), ai(), human(), ai(), human()];
    expect(fitWindow(items, { budget: 30, humanFirst: false })).toEqual({ start: 2, withoutMedia: [], tokens: 30, newestFits: true });
    expect(fitWindow(items, { budget: 1000, humanFirst: false }).start).toBe(0);
  });

  it('never splits a tool call from its results: the unit is in whole or not at all', () => {
    const items = [human(), call(10, ['a', 'b']), tool(10), tool(10), ai(), human()];
    expect(unitsOf(items).map((unit) => [unit.start, unit.end])).toEqual([[0, 1], [1, 4], [4, 5], [5, 6]]);
    // 20 for the last two; the 30-token call unit does not fit in 45, so the window starts after it.
    expect(fitWindow(items, { budget: 45, humanFirst: false }).start).toBe(4);
    expect(fitWindow(items, { budget: 50, humanFirst: false }).start).toBe(1);
  });

  it('never starts the window with a tool result', () => {
    // A tool result whose call is not before it (an orphan) is never the first message.
    const items = [tool(5), human(), ai()];
    expect(fitWindow(items, { budget: 100, humanFirst: false }).start).toBe(1);
  });

  it("keeps a person's message first when the provider needs it (Anthropic)", () => {
    const items = [human(), ai(), ai(), human(), ai()];
    expect(fitWindow(items, { budget: 30, humanFirst: false }).start).toBe(2);
    const fitted = fitWindow(items, { budget: 30, humanFirst: true });
    expect(fitted.start).toBe(3);
    expect(fitted.tokens).toBe(20);
  });

  it('with no person message in reach, humanFirst keeps what fits rather than nothing', () => {
    const items = [ai(), ai()];
    expect(fitWindow(items, { budget: 100, humanFirst: true }).start).toBe(0);
  });

  it('keeps multimodal parts whole, or replaces them with a marked placeholder when only the text fits', () => {
    const items = [image(1000, 20), ai(), human()];
    expect(fitWindow(items, { budget: 2000, humanFirst: false })).toMatchObject({ start: 0, withoutMedia: [] });
    expect(fitWindow(items, { budget: 50, humanFirst: false })).toEqual({ start: 0, withoutMedia: [0], tokens: 40, newestFits: true });
  });

  it('reports when not even the newest message fits', () => {
    expect(fitWindow([human(10), human(500)], { budget: 100, humanFirst: false })).toMatchObject({ newestFits: false, start: 2 });
  });
});

describe('I14: planning a fold', () => {
  const options = { budget: 100, foldAt: 0.75, keepRecent: 0.4, maxFoldTokens: 1000 };

  it('folds nothing while the messages stay under the threshold', () => {
    expect(planFold([human(30), ai(30)], options)).toBe(0);
  });

  it('folds the oldest messages, leaving at most keepRecent of the room', () => {
    const items = Array.from({ length: 10 }, (_, index) => (index % 2 === 0 ? human(10) : ai(10)));
    // 100 tokens > 75; keep 40 → fold the first 6.
    expect(planFold(items, options)).toBe(6);
  });

  it('never cuts inside a tool call unit, so what is left never opens with a tool result', () => {
    const items = [human(20), ai(20), human(10), call(10), tool(10), tool(10), ai(10), human(10)];
    const count = planFold(items, options);
    // Keeping 40 would mean keeping half of the call's unit: the whole unit is folded instead.
    expect(count).toBe(6);
    expect(items[count]!.kind).toBe('ai');
    expect(planFold(items, { ...options, keepRecent: 0.6 })).toBe(2);
  });

  it('folds at most what one summary call can read; the rest folds on later turns', () => {
    const items = Array.from({ length: 20 }, () => human(10));
    expect(planFold(items, { ...options, maxFoldTokens: 50 })).toBe(5);
  });

  it('always progresses, even when the oldest message alone is larger than one call can read', () => {
    expect(planFold([human(500), human(10), human(10)], { ...options, maxFoldTokens: 50 })).toBe(1);
  });
});

describe('context budget: agent → server → model profile → 32,000', () => {
  const settings = (value: unknown = {}) => contextSettingsSchema.parse(value);

  it('takes the first one that is set', () => {
    expect(resolveContextBudget({ settings: settings({ maxTokens: 9000 }), serverMaxTokens: 12_000, modelWindow: 128_000 })).toMatchObject({ maxTokens: 9000, source: 'agent' });
    expect(resolveContextBudget({ settings: settings(), serverMaxTokens: 12_000, modelWindow: 128_000 })).toMatchObject({ maxTokens: 12_000, source: 'server' });
    expect(resolveContextBudget({ settings: settings(), modelWindow: 128_000 })).toMatchObject({ maxTokens: 128_000, source: 'model_profile' });
    expect(resolveContextBudget({ settings: settings() })).toMatchObject({ maxTokens: DEFAULT_CONTEXT_TOKENS, source: 'default' });
  });

  it('keeps room for the answer and bounds the summary', () => {
    expect(resolveContextBudget({ settings: settings({ maxTokens: 8000 }) })).toMatchObject({ answerTokens: 1600, summaryTokens: 1200 });
    expect(resolveContextBudget({ settings: settings({ maxTokens: 200_000 }) })).toMatchObject({ answerTokens: 4096, summaryTokens: 2000 });
  });

  it('refuses settings that make no sense', () => {
    expect(contextSettingsSchema.safeParse({ maxTokens: 10 }).success).toBe(false);
    expect(contextSettingsSchema.safeParse({ foldAt: 0.5, keepRecent: 0.6 }).success).toBe(false);
    expect(contextSettingsSchema.safeParse({ maxTokens: 4000, answerTokens: 3000 }).success).toBe(false);
    expect(contextSettingsSchema.safeParse({ unknown: 1 }).success).toBe(false);
    expect(contextSettingsSchema.safeParse({ summaryModel: 'gpt' }).success).toBe(false);
  });
});

describe('I14: token counting ships with the package', () => {
  it('counts with cl100k_base offline, and reads special-token text as plain text', async () => {
    const { TokenCounter } = await import('../../src/agent/context/token-counter.js');
    const counter = new TokenCounter();
    expect(counter.text('hello world')).toBe(2);
    expect(counter.text('<|endoftext|>')).toBeGreaterThan(1); // never the single control token
    expect(counter.truncate('one two three four five', 2)).toBe('one two');
  });
});
