import { VigilError } from '../domain/errors.js';
import { toolSettingsSchema } from '../domain/tools/tool-settings.js';
import type { AgentKind, AgentRecord, Clock, Storage } from './ports.js';

export const DEFAULT_AGENT_ID = 'default';
export const DEFAULT_SYSTEM_PROMPT = 'You are a helpful assistant. Answer clearly and briefly.';

export interface CreateAgentInput {
  id: string;
  name: string;
  kind: AgentKind;
  systemPrompt: string;
  model: string | null;
  settings: Record<string, unknown>;
}

export class AgentService {
  constructor(private readonly storage: Storage, private readonly clock: Clock) {}

  create(userId: string, input: CreateAgentInput): Promise<AgentRecord> {
    return this.storage.agents.create({ ...input, userId }, this.clock.now().toISOString());
  }

  list(userId: string): Promise<AgentRecord[]> {
    return this.storage.agents.list(userId);
  }

  async get(userId: string, agentId: string): Promise<AgentRecord> {
    const agent = await this.storage.agents.get(userId, agentId);
    if (!agent) throw new VigilError('AGENT_NOT_FOUND', `no agent "${agentId}"`);
    return agent;
  }

  /** Set one key of the agent's settings (a feature's policy); AGENT_NOT_FOUND when it is not the user's. */
  async updateSetting(userId: string, agentId: string, key: string, value: unknown): Promise<AgentRecord> {
    if (key === 'tools') {
      // The same validation whatever the entry point (HTTP, CLI, a test): a bad policy never reaches a run.
      const checked = toolSettingsSchema.safeParse(value);
      if (!checked.success) throw new VigilError('VALIDATION_FAILED', `invalid tool settings: ${checked.error.issues.map((issue) => `${issue.path.join('.')} ${issue.message}`).join('; ')}`);
    }
    const agent = await this.storage.agents.updateSetting(userId, agentId, key, value, this.clock.now().toISOString());
    if (!agent) throw new VigilError('AGENT_NOT_FOUND', `no agent "${agentId}"`);
    return agent;
  }

  /** Every user has a "default" agent on the server's model, created on first use. */
  async getOrCreateDefault(userId: string): Promise<AgentRecord> {
    const existing = await this.storage.agents.get(userId, DEFAULT_AGENT_ID);
    if (existing) return existing;
    try {
      return await this.create(userId, { id: DEFAULT_AGENT_ID, name: 'Default agent', kind: 'chat', systemPrompt: DEFAULT_SYSTEM_PROMPT, model: null, settings: {} });
    } catch (error) {
      // Two first requests raced: the other one created it.
      const created = await this.storage.agents.get(userId, DEFAULT_AGENT_ID);
      if (created) return created;
      throw error;
    }
  }
}
