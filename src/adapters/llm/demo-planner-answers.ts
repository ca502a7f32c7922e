/**
 * The demo model's side of a planner run: without an API key, a planner agent on the demo
 * model still goes through a whole plan — a goal with two milestones, a step each, one
 * real tool call each (`current_time`, then `memory_write`), and critic verdicts — so the
 * plan tree, tool calls and critics can be watched live.
 *
 * The planner asks a model without tool calling for bare JSON with an instruction naming
 * the decision (agent/planner/structured-decision.ts); the context of the decision is the
 * JSON of the last person-role message. Every answer is a pure function of that context,
 * so a demo plan is deterministic, and every answer fits the planner's zod schemas (a
 * test checks them: test/unit/demo-chat-model.test.ts).
 */

/** The decision an instruction asks for, e.g. `strategic_plan`; undefined for a plain reply. */
export function decisionAsked(instruction: string): string | undefined {
  return /^Answer with one JSON object only \(no prose, no code fence\) for "([a-z_]+)"/.exec(instruction)?.[1];
}

export const DEMO_MILESTONES = {
  clock: { title: 'Check the clock', description: 'Read the current time with a tool, so the plan knows when it runs.', successCriteria: 'The current time is known.' },
  note: { title: 'Note the request', description: 'Write the request to memory, so it can be recalled later.', successCriteria: 'A memory holds the request.' },
} as const;

type Json = Record<string, unknown>;

/** The answer to one planner decision, from its context; undefined for a decision the demo does not know. */
export function demoDecision(name: string, context: Json): Json | undefined {
  const tools = toolNames(context.tools);
  switch (name) {
    case 'knowledge_plan':
      return { queries: [] };
    case 'knowledge_answers':
      return { results: [] };
    case 'strategic_plan':
      return { goal: `Answer ${quote(context.request)} (a demo plan)`, priority: 'medium', milestones: [DEMO_MILESTONES.clock, DEMO_MILESTONES.note] };
    case 'tactical_plan': {
      const milestone = isRecord(context.milestone) ? String(context.milestone.title ?? '') : '';
      if (milestone === DEMO_MILESTONES.clock.title) {
        return { steps: [{ description: 'Read the current time', tools: tools.includes('current_time') ? ['current_time'] : [], expectedOutcome: 'the time, in UTC' }] };
      }
      return { steps: [{ description: 'Write the request to memory', tools: tools.includes('memory_write') ? ['memory_write'] : [], expectedOutcome: 'a memory of the request' }] };
    }
    case 'executor_step': {
      const step = isRecord(context.step) ? String(context.step.description ?? '') : '';
      const goal = typeof context.goal === 'string' ? context.goal : 'the request';
      if (step.includes('current time') && tools.includes('current_time')) {
        return { calls: [{ tool: 'current_time', args: { timeZone: 'UTC' } }], done: true, result: 'Read the current time (UTC).' };
      }
      if (step.includes('memory') && tools.includes('memory_write')) {
        return { calls: [{ tool: 'memory_write', args: { content: `Planned with the demo model: ${goal}`.slice(0, 500) } }], done: true, result: 'Saved the request as a memory.' };
      }
      return { calls: [], done: true, result: `No tool for this step; done by hand: ${step || 'the step'}.` };
    }
    case 'tactical_critique': {
      const results = Array.isArray(context.toolResults) ? context.toolResults.length : 0;
      return { decision: 'approve', reason: `The step is done and ${results} tool call${results === 1 ? '' : 's'} came back; the success criteria are met.` };
    }
    case 'strategic_critique':
      return { decision: 'approve', reason: 'Both milestones are completed: the time is known and the request is noted.' };
    case 'overlord_decision':
      return { decision: 'end', reason: 'The demo plan needs nothing more.', next_check_at: null };
    default:
      return undefined;
  }
}

/** The demo's closing words after a plan, from the outcome the planner gives the model. */
export function demoPlanSummary(outcome: Json): string {
  const milestones = Array.isArray(outcome.milestones) ? outcome.milestones.filter(isRecord) : [];
  const done = milestones.filter((milestone) => milestone.status === 'completed').map((milestone) => String(milestone.title));
  const goal = typeof outcome.goal === 'string' ? outcome.goal : 'your request';
  return `[demo model] I worked through a plan for: ${goal}. Completed ${done.length} of ${milestones.length} milestones${done.length > 0 ? ` (${done.join('; ')})` : ''}. Shall I plan something else?`;
}

function toolNames(tools: unknown): string[] {
  return Array.isArray(tools) ? tools.filter(isRecord).map((tool) => String(tool.name)) : [];
}

function quote(request: unknown): string {
  const text = (typeof request === 'string' ? request : JSON.stringify(request ?? '')).replace(/\s+/g, ' ').trim();
  return `"${text.length > 120 ? `${text.slice(0, 119)}…` : text}"`;
}

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
