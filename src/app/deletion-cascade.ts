import type { AgentService } from './agent-service.js';
import type { ConversationService } from './conversation-service.js';
import type { EventBus } from './ports.js';
import type { ScheduleService } from './schedules/schedule-service.js';
import type { HookService } from './webhooks/hook-service.js';

/** More hooks than one person keeps; list() needs a bound. */
const HOOK_LIST_BOUND = 10_000;

/**
 * What deleting an agent or a thread stops, outside the transaction that deletes it.
 *
 * A thread's own rows, and what would start runs on it (its follow-ups, the
 * schedules and webhooks bound to it), go in the thread's deletion transaction
 * (ThreadRepository.delete): nothing of them changes unless the thread goes. Once it is
 * gone, its events go too (they hold what was said in it).
 *
 * An agent's schedules and webhooks go before its threads, and its threads before the
 * agent, on purpose: stopped first, they cannot make a new thread for the agent while
 * its threads are being deleted, and the agent, deleted last, is what a retry finds when
 * anything on the way failed (a thread's deletion needs its runs stopped and its
 * checkpoints gone, which no one transaction spans). Nothing is left naming an agent that
 * is gone. Without this a timer or cron job would fire later for an agent or thread that
 * no longer exists.
 */
export function wireDeletionCascade(parts: { agents: AgentService; conversations: ConversationService; schedules: ScheduleService; hooks: HookService; events: EventBus }): void {
  const { agents, conversations, schedules, hooks, events } = parts;

  conversations.onThreadGone(async (thread) => {
    // Subscriptions to the thread end with this event (on every instance), before its
    // events are forgotten: a thread made later with the same id is not theirs to stream.
    events.publish({ type: 'thread.deleted', threadId: thread.id, at: new Date().toISOString() });
    await events.forgetThread(thread.id);
  });

  agents.onDelete(async (agent) => {
    for (const schedule of await schedules.list(agent.userId)) {
      if (schedule.agentId === agent.id) await schedules.delete(agent.userId, schedule.id);
    }
    for (const hook of await hooks.list(agent.userId, HOOK_LIST_BOUND)) {
      if (hook.agentId === agent.id) await hooks.delete(agent.userId, hook.id);
    }
    // Each thread through deleteThread, so its follow-ups go too.
    await conversations.deleteThreadsOf(agent.userId, agent.id);
  });
}
