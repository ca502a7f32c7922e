import { z } from 'zod';
import { checkMcpServerHeaders, fetchToolSettingsSchema, mcpServerSchema, plannerSettingsOf, plannerSettingsSchema, type FetchToolSettings, type McpServerSettings, type PlannerSettings } from '../planner/planner-settings.js';
import type { RunTrigger } from '../run-context.js';

/**
 * An agent's tool settings, one shape for every agent kind, kept under
 * `agents.settings.tools`:
 *
 *   "tools": { "approval": { "memory_write": { "attended": "ask", "unattended": "ask" } },
 *              "fetch": {...}, "mcpServers": {...}, "maxSteps": 8, ... }
 *
 * `fetch` and `mcpServers` fall back to the planner's settings (`settings.planner`), so
 * existing planner agents keep the tools they had.
 */
export const TOOL_MODES = ['allow', 'ask', 'deny'] as const;
export type ToolMode = (typeof TOOL_MODES)[number];

/** The names the tool policy may use: a built-in, or an MCP tool `mcp__<server>__<tool>`. */
const toolNameSchema = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'a tool name: letters, digits, _ and -');

export const toolApprovalRuleSchema = z
  .object({
    /** Runs a person started and may be watching (a message in the API or a chat channel). */
    attended: z.enum(TOOL_MODES).optional(),
    /** Runs nobody started: follow-ups, schedules, webhooks, check-ins. */
    unattended: z.enum(TOOL_MODES).optional(),
    /** How long a request for this tool waits for a decision before it expires. */
    timeoutMs: z.number().int().min(1_000).max(30 * 86_400_000).optional(),
  })
  .strict();

export const toolSettingsSchema = z
  .object({
    approval: z.record(toolNameSchema, toolApprovalRuleSchema).default({}),
    /** Default deadlines of an approval request; unattended ones are shorter (nobody is watching). */
    approvalTimeoutMs: z
      .object({
        attended: z.number().int().min(1_000).max(30 * 86_400_000).default(86_400_000),
        unattended: z.number().int().min(1_000).max(30 * 86_400_000).default(3_600_000),
      })
      .strict()
      .prefault({}),
    fetch: fetchToolSettingsSchema.optional(),
    mcpServers: z.record(z.string(), mcpServerSchema).optional(),
    /** Model → tools rounds one run may make (I9). */
    maxSteps: z.number().int().min(1).max(50).default(8),
    /** How often one run may make the very same call (same tool, same arguments) (I9). */
    maxIdenticalCalls: z.number().int().min(1).max(20).default(2),
  })
  .strict();

/** Tool settings as a person writes them (agent create and PATCH): the stored shape, plus the MCP header check. */
export const toolSettingsInputSchema = toolSettingsSchema.superRefine((settings, context) => checkMcpServerHeaders(settings.mcpServers, context, ['mcpServers']));

export type ToolSettingsInput = z.input<typeof toolSettingsSchema>;
export type ToolSettings = z.infer<typeof toolSettingsSchema> & { fetch: FetchToolSettings; mcpServers: Record<string, McpServerSettings> };

/**
 * Built-in tools that only read: allowed whoever is watching. Everything else that acts
 * (memory_write) or reaches outside (http_fetch, MCP tools) asks when nobody is.
 */
export const READ_ONLY_BUILT_INS: ReadonlySet<string> = new Set(['memory_search', 'current_time', 'list_check_ins']);

/** Built-ins that act only within bounds checked elsewhere: check-ins fire within the autonomy caps (I5). */
export const BOUNDED_BUILT_INS: ReadonlySet<string> = new Set(['schedule_check_in', 'cancel_check_in']);

/** The tool settings of an agent's settings record, defaults and the planner's fallback filled in. */
export function toolSettingsOf(agentSettings: Record<string, unknown>): ToolSettings {
  const tools = toolSettingsSchema.parse(agentSettings.tools ?? {});
  const planner = plannerSettingsSchema.safeParse(agentSettings.planner ?? {});
  const plannerFetch = planner.success ? planner.data.fetch : fetchToolSettingsSchema.parse({});
  const plannerServers = planner.success ? planner.data.mcpServers : {};
  return { ...tools, fetch: tools.fetch ?? plannerFetch, mcpServers: tools.mcpServers ?? plannerServers };
}

/** A person is present in runs they started: their own message, or a chat channel message. */
export function isAttended(trigger: RunTrigger): boolean {
  return trigger === 'user' || trigger === 'channel';
}

/** The documented default of a tool with no rule of its own. */
export function defaultToolMode(tool: string, attended: boolean): ToolMode {
  if (READ_ONLY_BUILT_INS.has(tool) || BOUNDED_BUILT_INS.has(tool)) return 'allow';
  return attended ? 'allow' : 'ask';
}

export function toolModeFor(settings: Pick<ToolSettings, 'approval'>, tool: string, attended: boolean): ToolMode {
  const rule = settings.approval[tool];
  const configured = attended ? rule?.attended : rule?.unattended;
  return configured ?? defaultToolMode(tool, attended);
}

export function approvalTimeoutFor(settings: Pick<ToolSettings, 'approval' | 'approvalTimeoutMs'>, tool: string, attended: boolean): number {
  return settings.approval[tool]?.timeoutMs ?? (attended ? settings.approvalTimeoutMs.attended : settings.approvalTimeoutMs.unattended);
}

/**
 * A planner agent's settings with its tools taken from the one tool-settings shape:
 * `tools.fetch` and `tools.mcpServers` when set, else the planner's own (unchanged for
 * existing planner agents). Throws like plannerSettingsOf on invalid planner settings.
 */
export function plannerSettingsWithTools(agentSettings: Record<string, unknown>): PlannerSettings {
  const planner = plannerSettingsOf(agentSettings);
  const tools = toolSettingsSchema.safeParse(agentSettings.tools ?? {});
  if (!tools.success) return planner;
  return { ...planner, fetch: tools.data.fetch ?? planner.fetch, mcpServers: tools.data.mcpServers ?? planner.mcpServers };
}
