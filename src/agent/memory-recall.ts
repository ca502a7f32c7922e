import type { BaseMessage } from '@langchain/core/messages';
import type { MemoryStore } from '../app/ports.js';
import { chooseMemoryQuery, type MemoryQuerySource } from '../domain/memory-query.js';
import type { ClassifiableMessage } from '../domain/message-metadata.js';

/** A recalled memory, as kept in state for one model call. Plain data (I10). */
export interface RecalledMemory {
  id: string;
  content: string;
  score: number;
  /** When the memory's text was saved: its latest replace, else its creation (provenance shown to the model). */
  createdAt?: string;
}

/** How many memories one turn recalls, unless the graph is given another limit. */
export const DEFAULT_MEMORY_LIMIT = 5;

/** What recalling a turn's memories needs: the chat graph's own dependencies, and the context endpoint's. */
export interface MemoryRecallDependencies {
  memories: MemoryStore;
  memoryLimit?: number | undefined;
}

/**
 * The memories a turn's first model call recalls: the query chosen from the thread
 * (the current message; else the last real user message; else the summary; else none,
 * I2), then the search. The one recall the chat graph, the planner and GET
 * /api/threads/{id}/context use; it only reads (logging is the caller's).
 */
export async function recallForTurn(
  deps: MemoryRecallDependencies,
  state: { messages: readonly BaseMessage[]; summary: string | null },
  run: { userId: string; agentId: string },
): Promise<{ recalled: RecalledMemory[]; memoryQuerySource: MemoryQuerySource; query: string }> {
  // Read from the end by index: no per-message copy of a long thread.
  const choice = chooseMemoryQuery(classifiable(state.messages), state.summary);
  if (choice.source === 'none') return { recalled: [], memoryQuerySource: 'none', query: '' };
  const hits = await deps.memories.search({ userId: run.userId, agentId: run.agentId }, choice.query, { limit: deps.memoryLimit ?? DEFAULT_MEMORY_LIMIT });
  return {
    // The time its text was written (a replace keeps the creation time): how old what the model reads is.
    recalled: hits.map((hit) => ({ id: hit.id, content: hit.content, score: hit.score, createdAt: hit.updatedAt })),
    memoryQuerySource: choice.source,
    query: choice.query,
  };
}

/** The messages as chooseMemoryQuery reads them, converted only where it reads (it reads from the end). */
function classifiable(messages: readonly BaseMessage[]): ClassifiableMessage[] {
  return new Proxy(messages as unknown as ClassifiableMessage[], {
    get(target, property, receiver) {
      if (typeof property === 'string' && /^\d+$/.test(property)) {
        const message = (target as unknown as BaseMessage[])[Number(property)];
        return message === undefined ? undefined : { type: message.getType(), content: message.content, additional_kwargs: message.additional_kwargs };
      }
      if (property === 'at') return (index: number) => receiver[index < 0 ? target.length + index : index];
      return Reflect.get(target, property, receiver);
    },
  });
}
