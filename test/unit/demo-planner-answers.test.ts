import { HumanMessage, SystemMessage } from '@langchain/core/messages';
import { describe, expect, it } from 'vitest';
import { DemoChatModel } from '../../src/adapters/llm/demo-chat-model.js';
import { DEMO_MILESTONES, demoDecision } from '../../src/adapters/llm/demo-planner-answers.js';
import { parseJsonObject } from '../../src/agent/planner/structured-decision.js';
import {
  executorDecision,
  knowledgeAnswersDecision,
  knowledgePlanDecision,
  overlordDecision,
  strategicCritique,
  strategicPlanDecision,
  tacticalCritique,
  tacticalPlanDecision,
} from '../../src/domain/planner/planner-decisions.js';

const tools = [{ name: 'current_time' }, { name: 'memory_write' }, { name: 'memory_search' }];
/** The bare-JSON instruction the planner sends a model without tool calling (structured-decision.ts). */
const ask = (name: string, context: Record<string, unknown>) => [
  new SystemMessage('You are the planner.'),
  new HumanMessage(JSON.stringify(context, null, 1)),
  new SystemMessage(`Answer with one JSON object only (no prose, no code fence) for "${name}", matching this JSON schema:\n{}`),
];
const answer = (name: string, context: Record<string, unknown>) => parseJsonObject(DemoChatModel.replyFor(ask(name, context)));

describe('the demo model in a planner run', () => {
  it('answers every planner decision with JSON its schema accepts', () => {
    expect(knowledgePlanDecision.parse(answer('knowledge_plan', { request: 'x', tools }))).toEqual({ queries: [] });
    expect(knowledgeAnswersDecision.parse(answer('knowledge_answers', {}))).toEqual({ results: [] });
    const plan = strategicPlanDecision.parse(answer('strategic_plan', { request: 'Organise my week' }));
    expect(plan.goal).toContain('Organise my week');
    expect(plan.milestones.map((milestone) => milestone.title)).toEqual([DEMO_MILESTONES.clock.title, DEMO_MILESTONES.note.title]);
    expect(tacticalPlanDecision.parse(answer('tactical_plan', { milestone: { title: DEMO_MILESTONES.clock.title }, tools })).steps[0]!.tools).toEqual(['current_time']);
    expect(tacticalPlanDecision.parse(answer('tactical_plan', { milestone: { title: DEMO_MILESTONES.note.title }, tools })).steps[0]!.tools).toEqual(['memory_write']);
    const clock = executorDecision.parse(answer('executor_step', { goal: 'g', step: { description: 'Read the current time' }, tools: [{ name: 'current_time' }] }));
    expect(clock.calls).toEqual([{ tool: 'current_time', args: { timeZone: 'UTC' } }]);
    const note = executorDecision.parse(answer('executor_step', { goal: 'g', step: { description: 'Write the request to memory' }, tools: [{ name: 'memory_write' }] }));
    expect(note.calls).toEqual([{ tool: 'memory_write', args: { content: 'Planned with the demo model: g' } }]);
    expect(tacticalCritique.parse(answer('tactical_critique', { toolResults: [{}] })).decision).toBe('approve');
    expect(strategicCritique.parse(answer('strategic_critique', {})).decision).toBe('approve');
    expect(overlordDecision.parse(answer('overlord_decision', {})).decision).toBe('end');
  });

  it('without the tools, a step makes no calls instead of naming a tool that is not there', () => {
    expect(tacticalPlanDecision.parse(answer('tactical_plan', { milestone: { title: DEMO_MILESTONES.clock.title }, tools: [] })).steps[0]!.tools).toEqual([]);
    expect(executorDecision.parse(answer('executor_step', { step: { description: 'Read the current time' }, tools: [] })).calls).toEqual([]);
  });

  it('is deterministic, and its plain replies still end with a question (so the demo agent follows up)', () => {
    expect(answer('strategic_plan', { request: 'a' })).toEqual(answer('strategic_plan', { request: 'a' }));
    expect(DemoChatModel.replyFor([new HumanMessage('hello')])).toMatch(/\?$/);
  });

  it('closes a plan with a summary of the outcome, ending with a question', () => {
    const outcome = { goal: 'Answer "x" (a demo plan)', milestones: [{ title: 'Check the clock', status: 'completed' }, { title: 'Note the request', status: 'completed' }] };
    const reply = DemoChatModel.replyFor([new SystemMessage(`Prompt.\n\nPlan outcome (JSON):\n${JSON.stringify(outcome)}\n\nRule with nonce.`), new HumanMessage('x')]);
    expect(reply).toBe('[demo model] I worked through a plan for: Answer "x" (a demo plan). Completed 2 of 2 milestones (Check the clock; Note the request). Shall I plan something else?');
  });

  it('an unknown decision gets an empty object (the planner then reports a malformed answer)', () => {
    expect(demoDecision('something_new', {})).toBeUndefined();
    expect(answer('something_new', {})).toEqual({});
  });
});
