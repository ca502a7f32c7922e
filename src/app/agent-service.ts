import { AUTONOMY_SETTINGS_KEY, autonomyPolicySchema } from '../domain/autonomy/autonomy-policy.js';
import { systemPromptOverBudget } from '../domain/context/context-settings.js';
import { VigilError } from '../domain/errors.js';
import { toolSettingsInputSchema } from '../domain/tools/tool-settings.js';
import type { AgentChanges, AgentKind, AgentRecord, Clock, Storage } from './ports.js';

export const DEFAULT_AGENT_ID = 'default';
/**
 * Other names of a user's default agent: in the LangGraph protocol the assistant ids `agent`
 * (Agent Chat UI's default graph id) and `chat` (vigil's chat graph). No agent may take one,
 * or it would take the alias over from the default agent and its threads.
 */
export const DEFAULT_AGENT_ALIASES: ReadonlySet<string> = new Set(['agent', 'chat']);
export const DEFAULT_SYSTEM_PROMPT = 'You are a helpful assistant. Answer clearly and briefly.';

/** What a user's default agent starts with. */
export interface DefaultAgentTemplate {
  name: string;
  settings: Record<string, unknown>;
  /** Agents created beside the default one, the first time it is created. */
  companions?: Array<Pick<CreateAgentInput, 'id' | 'name' | 'kind' | 'systemPrompt'>>;
}

const PLAIN_DEFAULT: DefaultAgentTemplate = { name: 'Default agent', settings: {} };

/** Seconds of silence before the demo agent follows up: short, so a newcomer sees autonomy within a minute. */
export const DEMO_FOLLOW_UP_SECONDS = 20;

/**
 * The default agent when `npm start` runs the offline demo model: it follows up on its
 * own after a short silence, and its name says so, so the first thing a newcomer tries
 * shows an agent acting while they are away.
 */
export function demoDefaultAgent(): DefaultAgentTemplate {
  const delay = DEMO_FOLLOW_UP_SECONDS * 1000;
  const policy = autonomyPolicySchema.parse({
    enabled: true,
    delaysMs: { check_in: delay, question_unanswered: delay, task_incomplete: delay, waiting_for_decision: delay },
    minDelayMs: delay,
    maxPerSilence: 2,
  });
  return {
    name: `Demo agent (follows up after ${DEMO_FOLLOW_UP_SECONDS} s)`,
    settings: { [AUTONOMY_SETTINGS_KEY]: policy },
    // A planner beside it, so the plan view comes alive offline too (the demo model plans a short scripted plan).
    companions: [{ id: DEMO_PLANNER_ID, name: 'Demo planner (runs a short scripted plan)', kind: 'planner', systemPrompt: DEFAULT_SYSTEM_PROMPT }],
  };
}

export const DEMO_PLANNER_ID = 'demo-planner';

export interface CreateAgentInput {
  id: string;
  name: string;
  kind: AgentKind;
  systemPrompt: string;
  model: string | null;
  settings: Record<string, unknown>;
}

/** Called before an agent is deleted: each feature stops what runs for it (threads, timers, schedules, hooks). */
export type AgentDeletedHook = (agent: AgentRecord) => Promise<void>;

export class AgentService {
  private readonly deleteHooks: AgentDeletedHook[] = [];

  constructor(
    private readonly storage: Storage,
    private readonly clock: Clock,
    private readonly defaultAgent: DefaultAgentTemplate = PLAIN_DEFAULT,
    /** Counts a text's tokens as the context window does (a rough count when not given). */
    private readonly countTokens: (text: string) => number = (text) => Math.ceil(text.length / 4),
  ) {}

  /** A system prompt over its share of the agent's own context budget never reaches a run (I14). */
  private checkPromptFits(systemPrompt: string, settings: Record<string, unknown>): void {
    const problem = systemPromptOverBudget(systemPrompt, settings, this.countTokens);
    if (problem !== null) throw new VigilError('VALIDATION_FAILED', problem);
  }

  /** Register cleanup run before an agent is deleted. */
  onDelete(hook: AgentDeletedHook): void {
    this.deleteHooks.push(hook);
  }

  create(userId: string, input: CreateAgentInput): Promise<AgentRecord> {
    this.checkPromptFits(input.systemPrompt, input.settings ?? {});
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
      const checked = toolSettingsInputSchema.safeParse(value);
      if (!checked.success) throw new VigilError('VALIDATION_FAILED', `invalid tool settings: ${checked.error.issues.map((issue) => `${issue.path.join('.')} ${issue.message}`).join('; ')}`);
    }
    if (key === 'context') {
      const agent = await this.get(userId, agentId);
      this.checkPromptFits(agent.systemPrompt, { ...agent.settings, context: value });
    }
    const agent = await this.storage.agents.updateSetting(userId, agentId, key, value, this.clock.now().toISOString());
    if (!agent) throw new VigilError('AGENT_NOT_FOUND', `no agent "${agentId}"`);
    return agent;
  }

  /** Change the agent's own fields and, when given, features' settings (validated at the boundary); AGENT_NOT_FOUND when it is not the user's. */
  async update(userId: string, agentId: string, changes: AgentChanges, settings: ReadonlyArray<{ key: string; value: unknown }> = []): Promise<AgentRecord> {
    // Only a change of the prompt or of the budget is checked: an agent stored over its budget
    // (before this check, or by another path) keeps its other fields editable; runs cut the prompt.
    if (changes.systemPrompt !== undefined || settings.some((setting) => setting.key === 'context')) {
      const current = await this.get(userId, agentId);
      const settingsAfter = { ...current.settings, ...Object.fromEntries(settings.map((setting) => [setting.key, setting.value])) };
      this.checkPromptFits(changes.systemPrompt ?? current.systemPrompt, settingsAfter);
    }
    const now = this.clock.now().toISOString();
    let agent = await this.storage.agents.update(userId, agentId, changes, now);
    for (const setting of settings) if (agent) agent = await this.storage.agents.updateSetting(userId, agentId, setting.key, setting.value, now);
    if (!agent) throw new VigilError('AGENT_NOT_FOUND', `no agent "${agentId}"`);
    return agent;
  }

  /**
   * Delete the agent after every registered feature stopped what runs for it, so no
   * timer, schedule or webhook fires afterwards for an agent that is gone.
   */
  async delete(userId: string, agentId: string): Promise<void> {
    const agent = await this.get(userId, agentId);
    for (const hook of this.deleteHooks) await hook(agent);
    if (!(await this.storage.agents.delete(userId, agentId))) throw new VigilError('AGENT_NOT_FOUND', `no agent "${agentId}"`);
  }

  /** Every user has a "default" agent on the server's model, created on first use. */
  async getOrCreateDefault(userId: string): Promise<AgentRecord> {
    const existing = await this.storage.agents.get(userId, DEFAULT_AGENT_ID);
    if (existing) return existing;
    try {
      const { name, settings, companions = [] } = this.defaultAgent;
      const created = await this.create(userId, { id: DEFAULT_AGENT_ID, name, kind: 'chat', systemPrompt: DEFAULT_SYSTEM_PROMPT, model: null, settings });
      for (const companion of companions) {
        // The person may have made an agent with this id already (theirs stays), or a concurrent first request made it.
        if (!(await this.storage.agents.get(userId, companion.id))) await this.create(userId, { ...companion, model: null, settings: {} }).catch(() => undefined);
      }
      return created;
    } catch (error) {
      // Two first requests raced: the other one created it.
      const created = await this.storage.agents.get(userId, DEFAULT_AGENT_ID);
      if (created) return created;
      throw error;
    }
  }
}
