import { z } from 'zod';

/**
 * A planner agent's settings, kept under `agents.settings.planner` and validated here
 * whenever they are read or written: budgets (I9), tools, MCP servers and the overlord.
 * Every object uses `prefault({})`, so a partial setting gets every other default.
 */

/** A host name as written in an allow-list: `example.com`, or `*.example.com` for its subdomains. */
const allowedHostSchema = z
  .string()
  .trim()
  .toLowerCase()
  .regex(/^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(:\d{1,5})?$/, 'a host name such as "example.com" or "*.example.com"');

export const plannerBudgetsSchema = z
  .object({
    /** Graph nodes one run may execute (every node counts, including critics). */
    maxSteps: z.number().int().min(5).max(1000).default(80),
    /** Model tokens one run may spend (reported usage, else estimated from text). */
    maxTokens: z.number().int().min(100).max(10_000_000).default(200_000),
    /** Tool calls one run may make. */
    maxToolCalls: z.number().int().min(0).max(1000).default(40),
    /** Critic revisions per milestone (tactical) and per plan (strategic); at the cap the critic auto-approves. */
    maxRevisions: z.number().int().min(0).max(10).default(3),
    /** Visits of the same node in a row (seed 003: 15). */
    maxSameNodeLoops: z.number().int().min(2).max(100).default(15),
    /** How many times a cycle of nodes (A→B→A) may repeat without progress. */
    maxCycleRepeats: z.number().int().min(2).max(20).default(3),
    /** How many times one run may make the same tool call (same tool, same arguments). */
    maxIdenticalToolCalls: z.number().int().min(1).max(20).default(3),
    /** Retries of a malformed structured answer before the run stops. */
    structuredRetries: z.number().int().min(0).max(5).default(2),
  })
  .strict();

export const fetchToolSettingsSchema = z
  .object({
    /** Hosts the http_fetch tool may reach; empty (the default) disables the tool. */
    allowedHosts: z.array(allowedHostSchema).max(100).default([]),
    timeoutMs: z.number().int().min(100).max(60_000).default(10_000),
    maxBytes: z.number().int().min(1024).max(5 * 1024 * 1024).default(256 * 1024),
  })
  .strict();

const mcpServerNameSchema = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,31}$/, 'lowercase letters, digits, _ and -, at most 32');

export const mcpServerSchema = z.discriminatedUnion('transport', [
  z
    .object({
      transport: z.literal('stdio'),
      command: z.string().min(1).max(1000),
      args: z.array(z.string().max(4000)).max(100).default([]),
      env: z.record(z.string(), z.string()).optional(),
      cwd: z.string().max(4000).optional(),
    })
    .strict(),
  z
    .object({
      transport: z.literal('http'),
      url: z.string().url().regex(/^https?:\/\//, 'must be an http:// or https:// URL'),
      headers: z.record(z.string(), z.string()).optional(),
    })
    .strict(),
]);
export type McpServerSettings = z.infer<typeof mcpServerSchema>;

export const overlordSettingsSchema = z
  .object({
    /** Idle threads with an unfinished plan get heartbeats. */
    enabled: z.boolean().default(true),
    /** The first check after a plan stops or is created, and after a wake that changed nothing. */
    checkAfterMs: z.number().int().min(1000).max(30 * 86_400_000).default(15 * 60_000),
    /** A thread with activity more recent than this is not idle: the check is put off, no model call. */
    minIdleMs: z.number().int().min(0).max(30 * 86_400_000).default(5 * 60_000),
    /** Bounds of a model-chosen `next_check_at`. */
    minDelayMs: z.number().int().min(1000).max(30 * 86_400_000).default(60_000),
    maxDelayMs: z.number().int().min(1000).max(90 * 86_400_000).default(86_400_000),
    /** Heartbeat decisions one plan may receive before the heartbeats end. */
    maxWakes: z.number().int().min(1).max(1000).default(24),
    /** Model tokens one wake's decision may spend; over it the decision counts as `wait`. */
    wakeMaxTokens: z.number().int().min(100).max(100_000).default(4000),
  })
  .strict();

export const plannerSettingsSchema = z
  .object({
    budgets: plannerBudgetsSchema.prefault({}),
    fetch: fetchToolSettingsSchema.prefault({}),
    /** Tool servers by name; their tools are named `mcp__<server>__<tool>`. */
    mcpServers: z.record(mcpServerNameSchema, mcpServerSchema).default({}),
    overlord: overlordSettingsSchema.prefault({}),
  })
  .strict();

export type PlannerSettings = z.infer<typeof plannerSettingsSchema>;
export type PlannerBudgets = z.infer<typeof plannerBudgetsSchema>;
export type FetchToolSettings = z.infer<typeof fetchToolSettingsSchema>;
export type OverlordSettings = z.infer<typeof overlordSettingsSchema>;

/** The planner settings of an agent's settings record (`settings.planner`), defaults filled in. */
export function plannerSettingsOf(agentSettings: Record<string, unknown>): PlannerSettings {
  return plannerSettingsSchema.parse(agentSettings.planner ?? {});
}
