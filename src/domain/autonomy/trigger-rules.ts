import type { AutonomousTriggerType } from '../message-metadata.js';

/**
 * Deterministic rules that pick why the agent would follow up on its own reply. They
 * read the agent's reply (never a person's message, and never to decide visibility):
 *
 * 1. it offers options or asks the person to choose → `waiting_for_decision`
 *    (checked first: a choice is the most specific kind of question);
 * 2. it asks a question → `question_unanswered`;
 * 3. it mentions unfinished work or next steps → `task_incomplete`;
 * 4. otherwise → `check_in`.
 */
export interface TriggerChoice {
  triggerType: AutonomousTriggerType;
  /** A short, human-readable reason, stored on the timer and in the run's meta. */
  reason: string;
}

const DECISION = [
  /\bwhich (one|option|of (these|the|them|those)|would you|do you)\b/i,
  /\bwould you (prefer|rather|like (me )?to go with)\b/i,
  /\b(choose|pick|decide|select) (between|from|one|which|an? option)\b/i,
  /\blet me know (which|what you decide|your (choice|decision|preference))\b/i,
  /\b(option|plan|choice) [a-d1-4]\b/i,
  /\beither\b[^.?!]*\bor\b[^.?!]*\?/i,
  /^\s*(?:[-*•]|\d+[.)]|[a-d][.)])\s+\S.*\n\s*(?:[-*•]|\d+[.)]|[a-d][.)])\s+\S[\s\S]*\?/m,
];

const TASK = [
  /\bnext steps?\b/i,
  /\b(still|yet) (need|have) to\b/i,
  /\b(to-?do|remaining (steps|tasks|work)|unfinished|not (yet )?(done|finished|complete))\b/i,
  /\b(i'll|i will|we'll|we will) (continue|finish|follow up|get back)\b/i,
  /\bonce you('ve| have)? (done|finished|completed|tried)\b/i,
  /\blet me know (when|once|how it goes)\b/i,
  /\b(in progress|pending|work(ing)? on it)\b/i,
];

export function chooseTriggerByRules(reply: string): TriggerChoice {
  const text = reply.trim();
  if (DECISION.some((pattern) => pattern.test(text))) return { triggerType: 'waiting_for_decision', reason: 'the reply offered options or asked the person to choose' };
  if (asksQuestion(text)) return { triggerType: 'question_unanswered', reason: 'the reply asked the person a question' };
  if (TASK.some((pattern) => pattern.test(text))) return { triggerType: 'task_incomplete', reason: 'the reply mentioned unfinished work or next steps' };
  return { triggerType: 'check_in', reason: 'no question, choice or open task in the reply' };
}

/** A question mark ending a sentence, outside code and quotes the reply merely cites. */
function asksQuestion(text: string): boolean {
  const withoutCode = text.replace(/```[\s\S]*?```/g, ' ').replace(/`[^`]*`/g, ' ');
  const withoutQuotes = withoutCode.replace(/"[^"\n]*"/g, ' ').replace(/“[^”\n]*”/g, ' ');
  return /\?(\s|$|[)"'»”])/.test(withoutQuotes);
}
