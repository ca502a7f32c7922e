import { randomUUID } from 'node:crypto';
import { VigilError } from '../domain/errors.js';
import type { AgentService } from './agent-service.js';
import type { Clock, MemoryHit, MemoryPage, MemoryRecord, Storage } from './ports.js';

/** A user's long-term memories per agent; only the owner reads or deletes them (I12). */
export class MemoryService {
  constructor(private readonly storage: Storage, private readonly agents: AgentService, private readonly clock: Clock) {}

  async add(userId: string, agentId: string, content: string): Promise<MemoryRecord> {
    await this.agents.get(userId, agentId);
    return this.storage.memories.add({ userId, agentId }, { id: randomUUID(), content, origin: { by: 'api' } }, this.clock.now().toISOString());
  }

  /**
   * The LangGraph store's put: add the memory with this id (the client's key), or replace
   * the agent's memory that has it, in one write. 409 MEMORY_EXISTS when the id is another
   * agent's or another user's memory, which stays as it is.
   */
  async put(userId: string, agentId: string, content: string, id: string): Promise<MemoryRecord> {
    await this.agents.get(userId, agentId);
    const memory = await this.storage.memories.put({ userId, agentId }, { id, content, origin: { by: 'api' } }, this.clock.now().toISOString());
    if (memory === undefined) throw new VigilError('MEMORY_EXISTS', `key "${id}" is held by another memory; choose another UUID`);
    return memory;
  }

  /** The agent's newest `limit` memories. */
  async list(userId: string, agentId: string, limit: number): Promise<MemoryRecord[]> {
    return (await this.page(userId, agentId, { limit })).memories;
  }

  /** A page of the agent's memories, newest first; `nextCursor`, given back as `cursor`, pages on to older ones. */
  async page(userId: string, agentId: string, options: { limit: number; cursor?: string | undefined }): Promise<MemoryPage> {
    await this.agents.get(userId, agentId);
    return this.storage.memories.list({ userId, agentId }, options);
  }

  /** The agent's memory with this id, however old; undefined when the agent has none such. */
  async get(userId: string, agentId: string, memoryId: string): Promise<MemoryRecord | undefined> {
    await this.agents.get(userId, agentId);
    return this.storage.memories.get({ userId, agentId }, memoryId);
  }

  async search(userId: string, agentId: string, query: string, limit: number): Promise<MemoryHit[]> {
    await this.agents.get(userId, agentId);
    return this.storage.memories.search({ userId, agentId }, query, { limit });
  }

  async delete(userId: string, memoryId: string): Promise<void> {
    if (!(await this.storage.memories.delete(userId, memoryId))) throw new VigilError('MEMORY_NOT_FOUND', `no memory "${memoryId}"`);
  }
}
