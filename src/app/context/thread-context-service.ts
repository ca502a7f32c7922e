import type { ContextReport } from '../../domain/context/context-report.js';
import type { AgentService } from '../agent-service.js';
import type { ConversationService } from '../conversation-service.js';
import type { AgentRecord } from '../ports.js';

/** Reads what the next model call of a thread would receive; implemented beside the graphs (agent/context). */
export type ThreadContextReader = (request: { agent: AgentRecord; userId: string; threadId: string }) => Promise<ContextReport>;

/** GET /api/threads/{id}/context: the owner's thread only (another user's answers THREAD_NOT_FOUND, I12). */
export class ThreadContextService {
  constructor(
    private readonly conversations: Pick<ConversationService, 'getThread'>,
    private readonly agents: Pick<AgentService, 'get'>,
    private readonly read: ThreadContextReader,
  ) {}

  async describe(userId: string, threadId: string): Promise<ContextReport> {
    const thread = await this.conversations.getThread(userId, threadId);
    const agent = await this.agents.get(userId, thread.agentId);
    return this.read({ agent, userId, threadId });
  }
}
