import type { Logger } from 'pino';
import type { AutonomyPolicy } from '../../domain/autonomy/autonomy-policy.js';
import { localDay } from '../../domain/autonomy/zoned-time.js';
import type { StorageTransaction } from '../job-queue.js';
import type { TimerRepository } from './timer-repository.js';

/**
 * The agent's daily budget of autonomous model calls (I5). Every call autonomy makes —
 * a follow-up, each retry of it, the evaluator — reserves one first; a call that does
 * not fit is not made. The day is the local day in the policy's time zone. `within`: in
 * the caller's transaction, so the call is counted only together with what admits it.
 */
export async function reserveModelCall(
  timers: TimerRepository,
  logger: Logger,
  policy: AutonomyPolicy,
  owner: { userId: string; agentId: string },
  now: Date,
  purpose: string,
  within?: StorageTransaction,
): Promise<boolean> {
  const day = localDay(now, policy.timeZone);
  const reserved = await timers.reserveModelCalls(owner.userId, owner.agentId, day, 1, policy.modelCallsPerDay, within ? { within } : {});
  if (!reserved) logger.warn({ agentId: owner.agentId, day, budget: policy.modelCallsPerDay, purpose }, 'autonomy model-call budget spent; no model call');
  return reserved;
}
