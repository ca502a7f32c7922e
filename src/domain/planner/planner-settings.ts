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

/** RFC 9110 token: what an HTTP header name may be. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** What fetch can send as a header value: Latin-1, no control characters but tab. */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/**
 * Refuse MCP server headers that fetch could never send (a name that is no token, a value
 * with a character beyond Latin-1 such as a pasted "…"): otherwise they are stored and the
 * server fails at every load with a ByteString error. Checked only where settings are
 * written (`*InputSchema`), not in the schemas that read stored settings, so settings
 * stored before the check still load (their server is reported unavailable, as before).
 */
export function checkMcpServerHeaders(servers: Record<string, McpServerSettings> | undefined, context: z.RefinementCtx, path: readonly PropertyKey[]): void {
  for (const [name, server] of Object.entries(servers ?? {})) {
    if (server.transport !== 'http') continue;
    for (const [header, value] of Object.entries(server.headers ?? {})) {
      const at = [...path, name, 'headers', header];
      if (!HEADER_NAME.test(header)) context.addIssue({ code: 'custom', path: at, message: 'not an HTTP header name' });
      else if (!HEADER_VALUE.test(value)) context.addIssue({ code: 'custom', path: at, message: 'an HTTP header value may hold Latin-1 characters only, and no control character but tab' });
    }
  }
}

/** Planner settings as a person writes them (PUT …/planner): the stored shape, plus the header check. */
export const plannerSettingsInputSchema = plannerSettingsSchema.superRefine((settings, context) => checkMcpServerHeaders(settings.mcpServers, context, ['mcpServers']));

export type PlannerSettings = z.infer<typeof plannerSettingsSchema>;
export type PlannerBudgets = z.infer<typeof plannerBudgetsSchema>;
export type FetchToolSettings = z.infer<typeof fetchToolSettingsSchema>;
export type OverlordSettings = z.infer<typeof overlordSettingsSchema>;

/** The planner settings of an agent's settings record (`settings.planner`), defaults filled in. */
export function plannerSettingsOf(agentSettings: Record<string, unknown>): PlannerSettings {
  return plannerSettingsSchema.parse(agentSettings.planner ?? {});
}
