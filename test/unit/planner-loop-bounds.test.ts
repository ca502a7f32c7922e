import { describe, expect, it } from 'vitest';
import { appendVisit, detectCycle, nodeOf, sameNodeRun, toolCallSignature, visitEntry, VISIT_HISTORY_LIMIT } from '../../src/domain/planner/loop-bounds.js';
import { checkVisit } from '../../src/domain/planner/run-bounds.js';
import { emptyPlannerMetadata } from '../../src/domain/planner/planner-state.js';
import { plannerSettingsOf } from '../../src/domain/planner/planner-settings.js';

const at = (node: string, step = 0, milestone = 1, revision = 0) => visitEntry(node, { milestoneIndex: milestone, revision, step, strategicRevision: 0, milestonesDone: 0 });

describe('planner loop bounds (I9)', () => {
  it('I9: an A→B→A cycle is found, though the node changes on every visit (the seed reset its counter there)', () => {
    const history = [at('plan'), at('A', 1), at('B', 1), at('A', 1), at('B', 1), at('A', 1), at('B', 1)];
    expect(detectCycle(history, 3)).toEqual({ nodes: ['A', 'B'], repeats: 3 });
    expect(detectCycle(history.slice(0, -1), 3)).toBeNull(); // two turns and a half
    expect(detectCycle(history, 4)).toBeNull();
  });

  it('I9: longer cycles (A→B→C→A) are found too', () => {
    const turn = [at('A'), at('B'), at('C')];
    expect(detectCycle([...turn, ...turn, ...turn], 3)).toEqual({ nodes: ['A', 'B', 'C'], repeats: 3 });
  });

  it('progress is not a cycle: the same nodes on the next step, revision or milestone differ', () => {
    const history = [at('A', 0), at('B', 1), at('A', 1), at('B', 2), at('A', 2), at('B', 3)];
    expect(detectCycle(history, 3)).toBeNull();
    const milestones = [1, 2, 3].flatMap((milestone) => [at('plan', 0, milestone), at('run', 0, milestone), at('review', 1, milestone)]);
    expect(detectCycle(milestones, 3)).toBeNull();
  });

  it('I9: same-node runs count consecutive visits by name, whatever the progress', () => {
    const history = [at('B'), at('A', 0), at('A', 1), at('A', 2)];
    expect(sameNodeRun(history, 'A')).toBe(4);
    expect(sameNodeRun(history, 'B')).toBe(1);
    expect(detectCycle([at('A'), at('A'), at('A'), at('A'), at('A'), at('A')], 3)).toBeNull(); // a same-node loop, reported by sameNodeRun
  });

  it('the history is bounded', () => {
    let history: string[] = [];
    for (let index = 0; index < VISIT_HISTORY_LIMIT + 50; index++) history = appendVisit(history, at('A', index));
    expect(history).toHaveLength(VISIT_HISTORY_LIMIT);
    expect(nodeOf(history[0]!)).toBe('A');
  });

  it('a tool call signature ignores argument order and nothing else', () => {
    expect(toolCallSignature('fetch', { url: 'a', timeout: 1 })).toBe(toolCallSignature('fetch', { timeout: 1, url: 'a' }));
    expect(toolCallSignature('fetch', { url: 'a' })).not.toBe(toolCallSignature('fetch', { url: 'b' }));
    expect(toolCallSignature('fetch', { url: 'a' })).not.toBe(toolCallSignature('get', { url: 'a' }));
    expect(toolCallSignature('t', { nested: { b: 1, a: [1, { d: 2, c: 3 }] } })).toBe(toolCallSignature('t', { nested: { a: [1, { c: 3, d: 2 }], b: 1 } }));
  });

  it('checkVisit stops at the step budget, the same-node limit, a cycle and the token budget, in that order, each with its reason', () => {
    const meta = { ...emptyPlannerMetadata(), budgets: plannerSettingsOf({ planner: { budgets: { maxSteps: 10, maxSameNodeLoops: 3, maxTokens: 500 } } }).budgets };
    expect(checkVisit({ ...meta, stepCount: 10 }, 'A').stop).toEqual({ bound: 'max_steps', reason: 'step budget spent: 10 graph steps this run (limit 10)' });
    expect(checkVisit({ ...meta, visited: [at('A'), at('A', 1), at('A', 2)] }, 'A').stop?.bound).toBe('same_node_loop');
    expect(checkVisit({ ...meta, tokensUsed: 500 }, 'A').stop).toEqual({ bound: 'token_budget', reason: 'token budget spent: 500 tokens this run (limit 500)' });
    const check = checkVisit({ ...meta, stepCount: 3 }, 'A');
    expect(check.stop).toBeNull();
    expect(check.bookkeeping).toMatchObject({ stepCount: 4, sameNodeLoopCount: 1 });
  });

  it('planner settings fill in every default, and refuse unknown keys', () => {
    const settings = plannerSettingsOf({});
    expect(settings.budgets).toEqual({ maxSteps: 80, maxTokens: 200_000, maxToolCalls: 40, maxRevisions: 3, maxSameNodeLoops: 15, maxCycleRepeats: 3, maxIdenticalToolCalls: 3, structuredRetries: 2 });
    expect(settings.fetch.allowedHosts).toEqual([]);
    expect(settings.overlord.enabled).toBe(true);
    expect(() => plannerSettingsOf({ planner: { budgets: { maxStep: 3 } } })).toThrow();
    expect(() => plannerSettingsOf({ planner: { mcpServers: { Bad: { transport: 'stdio', command: 'x' } } } })).toThrow();
  });
});
