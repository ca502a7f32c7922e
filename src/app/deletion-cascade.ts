import type { AgentService } from './agent-service.js';
import type { AutonomyService } from './autonomy/autonomy-service.js';
import type { ConversationService } from './conversation-service.js';
import type { EventBus } from './ports.js';
import type { ScheduleService } from './schedules/schedule-service.js';
import type { HookService } from './webhooks/hook-service.js';

/** More hooks than one person keeps; list() needs a bound. */
const HOOK_LIST_BOUND = 10_000;

/**
 * What deleting an agent or a thread stops, in one place: a pending follow-up, the
 * schedules and webhooks that would start runs for it. Without this a timer or cron job
 * would fire later for an agent or thread that no longer exists. Once the thread is gone,
 * its events go too (they hold what was said in it).
 */
export function wireDeletionCascade(parts: { agents: AgentService; conversations: ConversationService; autonomy: AutonomyService; schedules: ScheduleService; hooks: HookService; events: EventBus }): void {
  const { agents, conversations, autonomy, schedules, hooks, events } = parts;

  conversations.onThreadDeleted(async (thread) => {
    await autonomy.onThreadDeleted(thread);
    for (const schedule of await schedules.list(thread.userId)) {
      if (schedule.threadId === thread.id) await schedules.delete(thread.userId, schedule.id);
    }
    for (const hook of await hooks.list(thread.userId, HOOK_LIST_BOUND)) {
      if (hook.threadId === thread.id) await hooks.delete(thread.userId, hook.id);
    }
  });
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
    // Each thread through deleteThread, so its follow-up is cancelled too.
    await conversations.deleteThreadsOf(agent.userId, agent.id);
  });
}
