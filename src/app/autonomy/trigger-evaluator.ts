import { HumanMessage, SystemMessage } from '@langchain/core/messages';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { AutonomyPolicy } from '../../domain/autonomy/autonomy-policy.js';
import { chooseTriggerByRules, type TriggerChoice } from '../../domain/autonomy/trigger-rules.js';
import { autonomousTriggerTypeSchema } from '../../domain/message-metadata.js';
import type { AgentRecord, ChatModelResolver } from '../ports.js';
import { reserveModelCall } from './model-call-budget.js';
import type { TimerRepository } from './timer-repository.js';

/** What the evaluator must answer, validated again after the model's structured output. */
export const followUpDecisionSchema = z
  .object({
    follow_up: z.boolean().describe('true when a follow-up after silence would help the person'),
    trigger_type: autonomousTriggerTypeSchema.describe('why the follow-up would happen'),
    reasoning: z.string().min(1).max(2000).describe('one or two sentences: why'),
  })
  .strict();
export type FollowUpDecision = z.infer<typeof followUpDecisionSchema>;

export interface EvaluatedChoice extends TriggerChoice {
  /** False when the evaluator judged that no follow-up is needed. */
  followUp: boolean;
  source: 'rules' | 'model';
}

const EVALUATOR_PROMPT = [
  'You decide whether an assistant should follow up on its own if the person stays silent after its last reply.',
  'Trigger types: question_unanswered (the reply asked a question), waiting_for_decision (it offered options),',
  'task_incomplete (work or next steps remain), check_in (none of these).',
  'Answer with follow_up, trigger_type and a short reasoning.',
].join(' ');

/**
 * Picks the trigger of the next follow-up: deterministic rules first; with
 * `triggerChooser: rules+model` a model evaluator may refine the type or veto the
 * follow-up, through zod-validated structured output. The evaluator's reasoning goes to
 * the log and (bounded) to the timer and the follow-up run's record — never into the
 * thread as anyone's message. A failing, unsupported or over-budget evaluator falls back
 * to the rules.
 */
export class TriggerEvaluator {
  constructor(
    private readonly models: ChatModelResolver,
    private readonly defaultModel: string,
    private readonly timers: TimerRepository,
  ) {}

  async choose(input: { policy: AutonomyPolicy; agent: AgentRecord; reply: string; now: Date; signal: AbortSignal; log: Logger }): Promise<EvaluatedChoice> {
    const rules: EvaluatedChoice = { ...chooseTriggerByRules(input.reply), followUp: true, source: 'rules' };
    if (input.policy.triggerChooser !== 'rules+model') return rules;
    // I5: the evaluator is a model call like any other.
    if (!(await reserveModelCall(this.timers, input.log, input.policy, { userId: input.agent.userId, agentId: input.agent.id }, input.now, 'evaluator'))) return rules;
    try {
      const model = this.models(input.agent.model ?? this.defaultModel);
      const structured = model.withStructuredOutput(followUpDecisionSchema, { name: 'follow_up_decision' });
      const raw = await structured.invoke(
        [new SystemMessage(EVALUATOR_PROMPT), new HumanMessage(`The assistant's last reply:\n\n${input.reply}\n\nThe rules suggest: ${rules.triggerType}.`)],
        { signal: input.signal },
      );
      const decision = followUpDecisionSchema.parse(raw);
      input.log.info({ followUp: decision.follow_up, triggerType: decision.trigger_type, reasoning: decision.reasoning, rules: rules.triggerType }, 'follow-up evaluator decided');
      return { triggerType: decision.trigger_type, reason: `evaluator: ${decision.reasoning}`.slice(0, 500), followUp: decision.follow_up, source: 'model' };
    } catch (error) {
      if (input.signal.aborted) throw error;
      input.log.warn({ err: error }, 'follow-up evaluator failed or is unsupported by this model; using the rules');
      return rules;
    }
  }
}
