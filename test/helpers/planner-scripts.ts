/** Building blocks of scripted planner answers (see scripted-model.ts). */

export function milestone(title: string) {
  return { title, description: `Work on: ${title}`, successCriteria: `${title} is done` };
}

export function strategicPlan(goal: string, ...titles: string[]) {
  return { goal, priority: 'high', milestones: titles.map(milestone) };
}

export function step(description: string, tools: string[] = []) {
  return { description, tools, expectedOutcome: `${description}: done` };
}

export function tacticalPlan(...steps: Array<ReturnType<typeof step>>) {
  return { steps };
}

export function execute(calls: Array<{ tool: string; args?: Record<string, unknown> }>, done = true, result = 'step done') {
  return { calls: calls.map((call) => ({ tool: call.tool, args: call.args ?? {} })), done, result };
}

export const approve = (reason = 'the success criteria are met') => ({ decision: 'approve', reason });
export const revise = (reason = 'not good enough yet') => ({ decision: 'revise', reason });
export const carryOn = (reason = 'on track; go on') => ({ decision: 'continue', reason });
export const noKnowledge = { queries: [] };
