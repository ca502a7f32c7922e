import type { Logger } from 'pino';
import { policyFromSettings } from '../../domain/autonomy/autonomy-policy.js';
import { reserveModelCall } from '../autonomy/model-call-budget.js';
import type { TimerRepository } from '../autonomy/timer-repository.js';
import type { AgentRepository, Clock } from '../ports.js';

/**
 * A conversation-summary call made during an autonomous run is one of autonomy's model
 * calls: it reserves one of the agent's daily budget first (I5), like a follow-up or a
 * retry does. No budget left means no summary call: that turn trims instead.
 */
export function summaryCallAdmission(deps: { agents: Pick<AgentRepository, 'get'>; timers: TimerRepository; clock: Clock; logger: Logger }) {
  return async (owner: { userId: string; agentId: string }): Promise<boolean> => {
    const agent = await deps.agents.get(owner.userId, owner.agentId);
    const { policy } = policyFromSettings(agent?.settings ?? {});
    return reserveModelCall(deps.timers, deps.logger, policy, owner, deps.clock.now(), 'conversation summary');
  };
}
