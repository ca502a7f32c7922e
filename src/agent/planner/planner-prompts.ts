import { HumanMessage, SystemMessage, type BaseMessage } from '@langchain/core/messages';
import { modelMessagesFor } from '../envelope-injection.js';
import type { ActiveRunSettings } from '../run-settings.js';
import type { ToolDescriptor } from '../tools/planner-toolbox.js';

/**
 * The messages of the planner's internal model calls. They exist only for the call:
 * none of them is written to thread state (the lesson of the seed whose evaluator's
 * reasoning was saved as a person's message). Context goes in as JSON, so what the
 * model is told is exactly what the state holds.
 */
const ROLES = {
  knowledge_plan:
    'You are the knowledge planner of a planning agent. Before any plan is made, list the questions whose answers the plan needs, where to look for each ("memory" for what you remember about the person, or a tool name), and a priority from 1 to 5. Give a tool call only when a tool can answer. Return no questions when nothing needs looking up.',
  knowledge_answers: 'You answer the knowledge questions from the evidence gathered. For each, give the answer, the sources it rests on, and your confidence from 0 to 1 (low when the evidence is thin).',
  strategic_plan:
    'You are the strategic planner. State the goal, then the ordered milestones that reach it, each with concrete success criteria. Keep milestones few and checkable.',
  strategic_revision:
    'You are the strategic planner, revising a plan after the strategic critic asked for changes. Completed milestones stay as they are; give the milestones that should follow them.',
  tactical_plan:
    'You are the tactical planner. Plan the steps that achieve the active milestone, each naming the tools it may use (only from the list given) and its expected outcome.',
  executor:
    'You are the tactical executor. For the current step, give the tool calls to make now (tool names and arguments from the list given), then say whether the step is done with these calls, and what it achieved.',
  tactical_critique:
    'You are the tactical critic. Judge the active milestone against its success criteria: approve when it is met; revise when the steps must be re-planned (say why); continue only while planned steps remain to run.',
  strategic_critique: 'You are the strategic critic. Judge whether the completed milestones achieve the goal: approve, or revise (say what is missing).',
  overlord:
    'You are the overlord of an idle conversation with an unfinished plan. Decide: plan (work on it now), wait (check again later; give next_check_at), or end (stop checking, e.g. the plan is stale or needs the person).',
} as const;

export type PlannerRole = keyof typeof ROLES;

/**
 * A decision inside a run: built like every model call of a run (envelope-injection.ts),
 * so the system prompt carries the run-context rule with this run's nonce, and a cron,
 * webhook, channel or heartbeat run shows the model its envelope before the task (I4).
 */
export function decisionMessages(role: PlannerRole, run: ActiveRunSettings, context: Record<string, unknown>): BaseMessage[] {
  return modelMessagesFor([new HumanMessage(JSON.stringify(context, null, 1))], run, { systemPrompt: `${run.systemPrompt}\n\n${ROLES[role]}` });
}

/** A decision outside any run (the overlord deciding whether to start one): no run, no nonce. */
export function standaloneDecisionMessages(role: PlannerRole, agentPrompt: string, context: Record<string, unknown>): BaseMessage[] {
  return [new SystemMessage(`${agentPrompt}\n\n${ROLES[role]}`), new HumanMessage(JSON.stringify(context, null, 1))];
}

/** Tools as the model sees them: name, description, arguments. */
export function toolsForPrompt(tools: readonly ToolDescriptor[]): Array<{ name: string; description: string; parameters: Record<string, unknown> }> {
  return tools.map((tool) => ({ name: tool.name, description: tool.description.slice(0, 500), parameters: tool.parameters }));
}

export function summaryInstruction(agentPrompt: string, context: Record<string, unknown>): string {
  return (
    `${agentPrompt}\n\nYou have finished working on the person's request with a plan. Tell the person, briefly and plainly, what was done and what came out of it. Do not mention milestones, critics or internal steps unless it helps.\n\nPlan outcome (JSON):\n${JSON.stringify(context)}`
  );
}
