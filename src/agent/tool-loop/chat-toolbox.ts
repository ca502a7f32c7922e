import type { AgentRepository } from '../../app/ports.js';
import { plannerSettingsSchema } from '../../domain/planner/planner-settings.js';
import { toolSettingsOf, type ToolSettings } from '../../domain/tools/tool-settings.js';
import { withTools, type Toolbox, type ToolboxFactory } from '../tools/planner-toolbox.js';
import { createCheckInTools, type CheckInPort } from './check-in-tools.js';

export interface RunTools {
  toolbox: Toolbox;
  settings: ToolSettings;
}

/**
 * The tools of a chat agent's run: the planner's toolbox (built-ins and the agent's MCP
 * servers), under the agent's one tool-settings shape. Built per use from the agent's
 * current settings and never kept in graph state (I10).
 */
export class ChatToolboxSource {
  constructor(private readonly deps: { agents: AgentRepository; toolboxes: ToolboxFactory; checkIns?: CheckInPort }) {}

  /** With `run`, the run's thread tools too (check-ins). */
  async forAgent(userId: string, agentId: string, run?: { threadId: string; runId: string }): Promise<RunTools | undefined> {
    const agent = await this.deps.agents.get(userId, agentId);
    if (!agent) return undefined;
    const settings = toolSettingsOf(agent.settings);
    const stored = plannerSettingsSchema.safeParse(agent.settings.planner ?? {});
    const planner = stored.success ? stored.data : plannerSettingsSchema.parse({});
    const base = await this.deps.toolboxes.toolboxFor({ namespace: { userId, agentId }, settings: { ...planner, fetch: settings.fetch, mcpServers: settings.mcpServers }, run });
    const checkIns = this.deps.checkIns;
    const toolbox = checkIns && run ? withTools(base, createCheckInTools(checkIns, { userId, agentId, threadId: run.threadId, runId: run.runId })) : base;
    return { toolbox, settings };
  }

  /**
   * Why edited arguments do not fit the tool, or null (the approval API's check). With the
   * run that asked, whose thread's tools (check-ins) exist only within a run: without it an
   * edit of a check-in call would be refused as a call of an unknown tool.
   */
  async validate(run: { userId: string; agentId: string; threadId: string; runId: string }, tool: string, args: Record<string, unknown>): Promise<string | null> {
    const tools = await this.forAgent(run.userId, run.agentId, { threadId: run.threadId, runId: run.runId });
    if (!tools) return `no agent "${run.agentId}"`;
    return tools.toolbox.validate(tool, args);
  }
}
