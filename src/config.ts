import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { VigilError } from './domain/errors.js';

/**
 * Every setting, in one zod schema. Sources, later wins: defaults < config file
 * (VIGIL_CONFIG_FILE, JSON) < environment. Validated once at start-up and frozen; a bad
 * setting stops start-up with a message naming it.
 */
const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '::1']);

const modelSpecSchema = z
  .string()
  .regex(/^(demo|openai:.+|anthropic:.+)$/, 'must be "demo", "openai:<model>" or "anthropic:<model>"');

const authTokensSchema = z
  .string()
  .transform((raw, context) => {
    const tokens = new Map<string, string>(); // token → user id
    for (const pair of raw.split(',').map((part) => part.trim()).filter(Boolean)) {
      const separator = pair.indexOf(':');
      const user = pair.slice(0, separator).trim();
      const token = pair.slice(separator + 1).trim();
      if (separator <= 0 || !user || !token) {
        context.addIssue({ code: 'custom', message: 'each entry must be "user:token"' });
        return z.NEVER;
      }
      if (!/^[A-Za-z0-9._@-]{1,64}$/.test(user)) {
        context.addIssue({ code: 'custom', message: `user id "${user}" may only use letters, digits and . _ @ -` });
        return z.NEVER;
      }
      if (token.length < 16) {
        context.addIssue({ code: 'custom', message: `the token of "${user}" is shorter than 16 characters` });
        return z.NEVER;
      }
      // A token names one user: given to two, the later silently took it, and the first
      // user's requests were served as the second's (I12).
      const holder = tokens.get(token);
      if (holder !== undefined && holder !== user) {
        context.addIssue({ code: 'custom', message: `"${holder}" and "${user}" have the same token; each user needs a token of their own` });
        return z.NEVER;
      }
      tokens.set(token, user);
    }
    // Set but naming nobody (",", a template left empty): the server would run without
    // auth, one local user, which is not what setting it asked for.
    if (tokens.size === 0) {
      context.addIssue({ code: 'custom', message: 'names no "user:token" pair (leave it unset for one local user without tokens)' });
      return z.NEVER;
    }
    return tokens;
  });

/**
 * A whole-number setting. Settings arrive as text, and `Number()` reads a blank value as 0 and
 * "0x50" as 80: `VIGIL_PORT=" "` listened on a random port and `VIGIL_SHUTDOWN_TIMEOUT_MS=" "`
 * gave running turns no grace, silently. Only decimal digits (and a sign, so that a negative
 * value is told it is too small) are read as a number.
 */
function wholeNumber(min: number, max: number) {
  return z
    .string()
    .trim()
    .regex(/^-?\d+$/, 'must be a whole number in decimal digits')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));
}

/** The longest wait a Node timer takes: a longer one fires at once (TimeoutOverflowWarning). */
const MAX_TIMER_MS = 2_147_483_647;

/** A URL vigil calls over HTTP: anything else (ftp:, javascript:) would only fail at its first use. */
const httpUrl = z
  .string()
  .url()
  .refine((url) => /^https?:\/\//i.test(url), 'must be an http:// or https:// URL');

export const configSchema = z
  .object({
    VIGIL_HOST: z.string().min(1).default('127.0.0.1'),
    VIGIL_PORT: wholeNumber(0, 65535).default(8787),
    VIGIL_DATA_DIR: z.string().min(1).default('./data'),
    DATABASE_URL: z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'must start with postgres:// or postgresql:// (leave unset for SQLite)')
      .optional(),
    VIGIL_DATABASE_SCHEMA: z.string().regex(/^[a-z_][a-z0-9_]{0,62}$/, 'must be a lowercase PostgreSQL identifier').default('public'),
    VIGIL_AUTH_TOKENS: authTokensSchema.optional(),
    VIGIL_MODEL: modelSpecSchema.optional(),
    OPENAI_API_KEY: z.string().min(1).optional(),
    OPENAI_BASE_URL: httpUrl.optional(),
    ANTHROPIC_API_KEY: z.string().min(1).optional(),
    VIGIL_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    // Browser origins allowed to call the API (comma-separated, exact origins, or *); unset: no CORS.
    VIGIL_CORS_ORIGINS: z
      .string()
      .optional()
      .transform((value) => (value ?? '').split(',').map((origin) => origin.trim()).filter((origin) => origin.length > 0))
      .pipe(z.array(z.string().regex(/^(\*|https?:\/\/[^/\s]+)$/, 'each origin is * or scheme://host[:port]'))),
    VIGIL_BODY_LIMIT: wholeNumber(1024, 50 * 1024 * 1024).default(1024 * 1024),
    // Prometheus metrics on a port of their own (no auth there: bind it where only scrapers reach).
    VIGIL_METRICS_PORT: wholeNumber(0, 65535).optional(),
    // OpenTelemetry's own variable names, so an operator's usual setup applies.
    OTEL_EXPORTER_OTLP_ENDPOINT: httpUrl.optional(),
    OTEL_SERVICE_NAME: z.string().min(1).max(128).default('vigil'),
    VIGIL_SHUTDOWN_TIMEOUT_MS: wholeNumber(0, 600_000).default(10_000),
    VIGIL_RETENTION_DAYS: wholeNumber(1, 3650).default(30),
    // A model call's timeout (and stall timer): a Node timer, so no longer than one can wait.
    VIGIL_MODEL_TIMEOUT_MS: wholeNumber(1000, MAX_TIMER_MS).default(120_000),
    // The context budget of agents that set none; unset = the model's window where known, else 32,000.
    VIGIL_CONTEXT_TOKENS: wholeNumber(1000, 10_000_000).optional(),
    VIGIL_SCHEDULE_MISSED_GRACE_MS: wholeNumber(100, Number.MAX_SAFE_INTEGER).default(60_000),
    // How often each instance looks for runs a dead process left `running` (and once at start).
    VIGIL_RUN_SWEEP_INTERVAL_MS: wholeNumber(100, 3_600_000).default(30_000),
    // Due timers (follow-ups, check-ins, schedule fires) this instance runs at once, and claims per round trip (SQLite and PostgreSQL).
    VIGIL_TIMER_CONCURRENCY: wholeNumber(1, 256).default(32),
    // Names this instance in /readyz and the logs; unset = a random id per start.
    VIGIL_INSTANCE_ID: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'must be 1 to 64 letters, digits, . _ or -').optional(),
    // Planner agents' stdio MCP servers are processes on this machine: only these commands may start.
    VIGIL_MCP_STDIO_COMMANDS: z
      .string()
      .transform((raw) => raw.split(',').map((part) => part.trim()).filter(Boolean))
      .optional(),
    VIGIL_OUTBOUND_WEBHOOKS_ALLOW_PRIVATE: z.enum(['true', 'false']).default('false'),
    VIGIL_SECRETS_KEY: z.string().min(32, 'must be at least 32 characters (e.g. openssl rand -base64 32)').optional(),
    VIGIL_TELEGRAM_BOT_TOKEN: z.string().regex(/^\d{3,20}:[A-Za-z0-9_-]{20,}$/, 'must look like 123456789:AA… (from @BotFather)').optional(),
    VIGIL_TELEGRAM_MODE: z.enum(['polling', 'webhook']).default('polling'),
    // Telegram allows 1-256 of [A-Za-z0-9_-]; 16+ so that it cannot be guessed.
    VIGIL_TELEGRAM_WEBHOOK_SECRET: z.string().regex(/^[A-Za-z0-9_-]{16,256}$/, 'must be 16 to 256 letters, digits, _ or -').optional(),
    // Telegram calls webhooks over https only (setWebhook refuses anything else).
    VIGIL_TELEGRAM_WEBHOOK_URL: z.string().url().refine((url) => /^https:\/\//i.test(url), 'must be an https:// URL (Telegram calls webhooks over https only)').optional(),
    VIGIL_TELEGRAM_API_ROOT: httpUrl
      .default('https://api.telegram.org')
      .transform((url) => url.replace(/\/+$/, '')),
    VIGIL_TELEGRAM_USER: z.string().regex(/^[A-Za-z0-9._@-]{1,64}$/, 'must be a vigil user id').optional(),
    VIGIL_TELEGRAM_AGENT: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'must be an agent id').default('default'),
    VIGIL_TELEGRAM_ALLOWED_CHATS: z
      .string()
      .regex(/^\s*-?\d{1,20}\s*(,\s*-?\d{1,20}\s*)*$/, 'must be a comma-separated list of chat ids')
      .transform((raw) => new Set(raw.split(',').map((part) => Number(part.trim()))))
      .optional(),
  })
  .superRefine((value, context) => {
    if (!value.VIGIL_AUTH_TOKENS?.size && !LOOPBACK_HOSTS.has(value.VIGIL_HOST)) {
      context.addIssue({
        code: 'custom',
        path: ['VIGIL_HOST'],
        message: `refusing to bind ${value.VIGIL_HOST} without VIGIL_AUTH_TOKENS: with no tokens the server serves one local user and only on a loopback host`,
      });
    }
    const model = value.VIGIL_MODEL;
    if (model?.startsWith('anthropic:') && !value.ANTHROPIC_API_KEY) {
      context.addIssue({ code: 'custom', path: ['ANTHROPIC_API_KEY'], message: 'is required when VIGIL_MODEL is anthropic:<model>' });
    }
    if (model?.startsWith('openai:') && !value.OPENAI_API_KEY && !value.OPENAI_BASE_URL) {
      context.addIssue({ code: 'custom', path: ['OPENAI_API_KEY'], message: 'is required when VIGIL_MODEL is openai:<model> (or set OPENAI_BASE_URL for a local server)' });
    }
    // Telegram settings without a bot token configure a channel that never starts: most likely
    // the token's variable is misspelt or missing, which would otherwise pass unnoticed.
    if (value.VIGIL_TELEGRAM_BOT_TOKEN === undefined) {
      const unused: string[] = (['VIGIL_TELEGRAM_WEBHOOK_SECRET', 'VIGIL_TELEGRAM_WEBHOOK_URL', 'VIGIL_TELEGRAM_ALLOWED_CHATS'] as const).filter((key) => value[key] !== undefined);
      if (value.VIGIL_TELEGRAM_MODE === 'webhook') unused.unshift('VIGIL_TELEGRAM_MODE');
      for (const key of unused) context.addIssue({ code: 'custom', path: [key], message: 'has no effect without VIGIL_TELEGRAM_BOT_TOKEN' });
    } else if (value.VIGIL_TELEGRAM_MODE === 'polling' && value.VIGIL_TELEGRAM_WEBHOOK_URL !== undefined) {
      context.addIssue({ code: 'custom', path: ['VIGIL_TELEGRAM_WEBHOOK_URL'], message: 'has no effect in polling mode (set VIGIL_TELEGRAM_MODE=webhook)' });
    }
    if (value.VIGIL_TELEGRAM_BOT_TOKEN !== undefined) {
      if (value.VIGIL_TELEGRAM_MODE === 'webhook' && !value.VIGIL_TELEGRAM_WEBHOOK_SECRET) {
        context.addIssue({ code: 'custom', path: ['VIGIL_TELEGRAM_WEBHOOK_SECRET'], message: 'is required when VIGIL_TELEGRAM_MODE is webhook' });
      }
      // Telegram threads belong to one vigil user, who must exist: a configured token's user, or the local user.
      const users = new Set(value.VIGIL_AUTH_TOKENS?.values() ?? []);
      const owner = value.VIGIL_TELEGRAM_USER ?? (users.size === 0 ? LOCAL_USER_ID : undefined);
      if (owner === undefined) {
        context.addIssue({ code: 'custom', path: ['VIGIL_TELEGRAM_USER'], message: 'is required with VIGIL_AUTH_TOKENS: the user who owns Telegram threads' });
      } else if (users.size > 0 ? !users.has(owner) : owner !== LOCAL_USER_ID) {
        context.addIssue({ code: 'custom', path: ['VIGIL_TELEGRAM_USER'], message: `"${owner}" is not a user of this server` });
      }
    }
  });

type Parsed = z.infer<typeof configSchema>;

export interface Config {
  readonly host: string;
  readonly port: number;
  readonly dataDir: string;
  readonly databaseUrl: string | undefined;
  /** PostgreSQL schema for vigil's tables and checkpoints. */
  readonly databaseSchema: string;
  /** token → user id; empty means one local user and loopback only. */
  readonly authTokens: ReadonlyMap<string, string>;
  readonly model: string; // 'demo' when none is configured
  readonly modelConfigured: boolean;
  readonly openaiApiKey: string | undefined;
  readonly openaiBaseUrl: string | undefined;
  readonly anthropicApiKey: string | undefined;
  readonly logLevel: Parsed['VIGIL_LOG_LEVEL'];
  readonly bodyLimit: number;
  /** Browser origins allowed by CORS (empty: CORS off). */
  readonly corsOrigins: readonly string[];
  /** Serve /metrics on this port instead of beside the API (undefined: beside the API, behind its auth). */
  readonly metricsPort: number | undefined;
  /** OTLP/HTTP endpoint for OpenTelemetry traces (one trace per run); undefined: no tracing. */
  readonly otelEndpoint: string | undefined;
  readonly otelServiceName: string;
  /** How long a graceful stop waits for runs in flight before it cancels them. */
  readonly shutdownTimeoutMs: number;
  /** Webhook deliveries, run records and finished timers older than this are pruned. */
  readonly retentionDays: number;
  readonly modelTimeoutMs: number;
  /** Context budget in tokens for agents without `context.maxTokens` (I14); undefined = the model's window, else 32,000. */
  readonly contextTokens: number | undefined;
  /** How late a schedule fire may start before it counts as missed (its missed-run policy applies). */
  readonly scheduleMissedGraceMs: number;
  /** How often runs left `running` by a dead process are looked for. */
  readonly runSweepIntervalMs: number;
  /** PostgreSQL: due-timer jobs this instance runs at once (their claim batch too). */
  readonly timerConcurrency: number;
  /** This instance's name (/readyz, logs); undefined = a random one per start. */
  readonly instanceId: string | undefined;
  /** Commands a planner's stdio MCP server may be started with (exact match, `*` = any); empty = none. */
  readonly mcpStdioCommands: readonly string[];
  /** Outbound webhooks may reach private and loopback addresses (off: refused). */
  readonly outboundWebhooksAllowPrivate: boolean;
  /** Encrypts stored secrets (hook secrets); unset = a key file in the data directory. */
  readonly secretsKey: string | undefined;
  /** The Telegram channel; undefined when no bot token is configured. */
  readonly telegram: TelegramConfig | undefined;
}

export interface TelegramConfig {
  readonly botToken: string;
  readonly mode: 'polling' | 'webhook';
  readonly webhookSecret: string | undefined;
  readonly webhookUrl: string | undefined;
  readonly apiRoot: string;
  /** The vigil user who owns Telegram threads. */
  readonly userId: string;
  readonly agentId: string;
  /** undefined = every chat may talk to the bot. */
  readonly allowedChats: ReadonlySet<number> | undefined;
}

/** The user id of the single local user when no tokens are configured. */
export const LOCAL_USER_ID = 'local';

/** Names of settings, for the README table and the test that keeps it in step. */
export const SETTING_NAMES = [...Object.keys(configSchema.shape), 'VIGIL_CONFIG_FILE'] as const;

export function loadConfig(environment: Record<string, string | undefined> = process.env): Config {
  const value = parseSettings(configSchema, environment);
  return Object.freeze({
    host: value.VIGIL_HOST,
    port: value.VIGIL_PORT,
    dataDir: value.VIGIL_DATA_DIR,
    databaseUrl: value.DATABASE_URL,
    databaseSchema: value.VIGIL_DATABASE_SCHEMA,
    authTokens: value.VIGIL_AUTH_TOKENS ?? new Map(),
    model: value.VIGIL_MODEL ?? 'demo',
    modelConfigured: value.VIGIL_MODEL !== undefined,
    openaiApiKey: value.OPENAI_API_KEY,
    openaiBaseUrl: value.OPENAI_BASE_URL,
    anthropicApiKey: value.ANTHROPIC_API_KEY,
    logLevel: value.VIGIL_LOG_LEVEL,
    bodyLimit: value.VIGIL_BODY_LIMIT,
    corsOrigins: Object.freeze([...value.VIGIL_CORS_ORIGINS]),
    metricsPort: value.VIGIL_METRICS_PORT,
    shutdownTimeoutMs: value.VIGIL_SHUTDOWN_TIMEOUT_MS,
    otelEndpoint: value.OTEL_EXPORTER_OTLP_ENDPOINT,
    otelServiceName: value.OTEL_SERVICE_NAME,
    retentionDays: value.VIGIL_RETENTION_DAYS,
    modelTimeoutMs: value.VIGIL_MODEL_TIMEOUT_MS,
    contextTokens: value.VIGIL_CONTEXT_TOKENS,
    scheduleMissedGraceMs: value.VIGIL_SCHEDULE_MISSED_GRACE_MS,
    runSweepIntervalMs: value.VIGIL_RUN_SWEEP_INTERVAL_MS,
    instanceId: value.VIGIL_INSTANCE_ID,
    timerConcurrency: value.VIGIL_TIMER_CONCURRENCY,
    mcpStdioCommands: Object.freeze(value.VIGIL_MCP_STDIO_COMMANDS ?? []),
    outboundWebhooksAllowPrivate: value.VIGIL_OUTBOUND_WEBHOOKS_ALLOW_PRIVATE === 'true',
    secretsKey: value.VIGIL_SECRETS_KEY,
    telegram:
      value.VIGIL_TELEGRAM_BOT_TOKEN === undefined
        ? undefined
        : Object.freeze({
            botToken: value.VIGIL_TELEGRAM_BOT_TOKEN,
            mode: value.VIGIL_TELEGRAM_MODE,
            webhookSecret: value.VIGIL_TELEGRAM_WEBHOOK_SECRET,
            webhookUrl: value.VIGIL_TELEGRAM_WEBHOOK_URL,
            apiRoot: value.VIGIL_TELEGRAM_API_ROOT,
            userId: value.VIGIL_TELEGRAM_USER ?? LOCAL_USER_ID,
            agentId: value.VIGIL_TELEGRAM_AGENT,
            allowedChats: value.VIGIL_TELEGRAM_ALLOWED_CHATS,
          }),
  });
}

const listenAddressSchema = z.object({ VIGIL_HOST: configSchema.shape.VIGIL_HOST, VIGIL_PORT: configSchema.shape.VIGIL_PORT });

/**
 * Where a server started with these settings listens (VIGIL_HOST, VIGIL_PORT), read from the
 * same sources as loadConfig (VIGIL_CONFIG_FILE, then the environment) and checked the same
 * way, without requiring the rest of the server's settings: what a client on this machine
 * (`vigil chat`) needs to find it.
 */
export function loadListenAddress(environment: Record<string, string | undefined> = process.env): { host: string; port: number } {
  const value = parseSettings(listenAddressSchema, environment);
  return { host: value.VIGIL_HOST, port: value.VIGIL_PORT };
}

/** The settings the schema names, the config file's overridden by the environment's, validated (CONFIG_INVALID names each bad one). */
function parseSettings<T>(schema: z.ZodType<T>, environment: Record<string, string | undefined>): T {
  const fromFile = readConfigFile(environment.VIGIL_CONFIG_FILE);
  const merged: Record<string, unknown> = { ...fromFile };
  for (const key of Object.keys(configSchema.shape)) {
    const value = environment[key];
    if (value !== undefined && value !== '') merged[key] = value;
  }
  const result = schema.safeParse(merged);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => `${issue.path.join('.') || '(config)'}: ${issue.message}`);
    throw new VigilError('CONFIG_INVALID', `invalid configuration — ${problems.join('; ')}`, { details: problems });
  }
  return result.data;
}

function readConfigFile(path: string | undefined): Record<string, unknown> {
  if (!path) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new VigilError('CONFIG_INVALID', `VIGIL_CONFIG_FILE: cannot read ${path} as JSON`, { cause: error });
  }
  const result = z.record(z.string(), z.union([z.string(), z.number()])).safeParse(parsed);
  if (!result.success) throw new VigilError('CONFIG_INVALID', 'VIGIL_CONFIG_FILE: must be a JSON object of setting names to strings or numbers');
  const known = new Set(Object.keys(configSchema.shape));
  const unknown = Object.keys(result.data).filter((key) => !known.has(key));
  if (unknown.length > 0) throw new VigilError('CONFIG_INVALID', `VIGIL_CONFIG_FILE: unknown setting ${unknown.join(', ')}`);
  return Object.fromEntries(Object.entries(result.data).map(([key, value]) => [key, String(value)]));
}
