import type { Logger } from 'pino';
import { policyFromSettings } from '../../domain/autonomy/autonomy-policy.js';
import { reserveModelCall } from '../autonomy/model-call-budget.js';
import type { TimerRepository } from '../autonomy/timer-repository.js';
import type { AgentRepository, Clock } from '../ports.js';

/**
 * A model call made during an autonomous run beyond the one its admission reserved (a
 * conversation summary, a tool loop's next step) is one of autonomy's model calls too: it
 * reserves one of the agent's daily budget first (I5), like a follow-up or a retry does.
 * No budget left means no call: a summary's turn trims instead, a tool loop ends.
 */
export function modelCallAdmission(deps: { agents: Pick<AgentRepository, 'get'>; timers: TimerRepository; clock: Clock; logger: Logger }, purpose: string) {
  return async (owner: { userId: string; agentId: string }): Promise<boolean> => {
    const agent = await deps.agents.get(owner.userId, owner.agentId);
    const { policy } = policyFromSettings(agent?.settings ?? {});
    return reserveModelCall(deps.timers, deps.logger, policy, owner, deps.clock.now(), purpose);
  };
}
