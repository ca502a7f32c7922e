import { AsyncLocalStorage } from 'node:async_hooks';
import { pino, stdSerializers, type DestinationStream, type Logger } from 'pino';

export type LogContextRunner = <T>(fields: Record<string, string>, work: () => T) => T;

export interface LoggerBundle {
  logger: Logger;
  /** Run work in its own log context: these fields (request id, job id, …) and no others on every line it writes. */
  withLogContext: LogContextRunner;
}

/**
 * pino JSON logs. Request, run and job ids travel in an AsyncLocalStorage so that log
 * lines written deep in the app layer carry the id of the unit of work that caused them.
 *
 * Two rules keep a line about one unit of work only:
 * - `withLogContext` starts a fresh context with exactly the given fields: a job that a
 *   request happened to schedule, or a run a job started, does not inherit the ids of
 *   whatever ran before it (they used to be spread into every later context).
 * - No key is written twice in a line. pino writes a child logger's bindings, the
 *   mixin's fields and the call's own fields one after another, so the same key could
 *   appear two or three times (JSON.parse keeps the last, a log shipper may keep the
 *   first). The context's fields are left out when the logger or the call already names
 *   them, and the call's fields when the logger's bindings do (the bound value is the
 *   one the child logger was made for).
 */
export function createLogger(level: string, destination?: DestinationStream, options: { secrets?: readonly (string | undefined)[] } = {}): LoggerBundle {
  const context = new AsyncLocalStorage<Readonly<Record<string, string>>>();
  // The keys the logger of the line being written has bound: the mixin reads them, the
  // merge strategy (called right after it, synchronously, for the same line) uses them.
  let boundKeys: ReadonlySet<string> = new Set();
  const scrub = secretScrubber(options.secrets ?? []);
  const logger = pino(
    {
      level,
      base: { service: 'vigil' },
      mixin: (mergeObject, _level, instance) => {
        boundKeys = boundKeysOf(instance);
        const store = context.getStore();
        if (!store) return {};
        const fields: Record<string, string> = {};
        for (const [key, value] of Object.entries(store)) if (!boundKeys.has(key) && !Object.hasOwn(mergeObject, key)) fields[key] = value;
        return fields;
      },
      mixinMergeStrategy: (mergeObject, mixinObject) => {
        const merged = mixinObject as Record<string, unknown>;
        for (const [key, value] of Object.entries(mergeObject)) if (!boundKeys.has(key)) merged[key] = value;
        return merged;
      },
      serializers: {
        err: stdSerializers.err,
        req: (request: { method?: string; url?: string; ip?: string }) => ({
          method: request.method,
          // A WebSocket may carry its bearer token as ?token=: never log it.
          url: request.url?.replace(/([?&]token=)[^&]*/g, '$1[redacted]'),
          remoteAddress: request.ip,
        }),
        res: (reply: { statusCode?: number }) => ({ statusCode: reply.statusCode }),
      },
      redact: { paths: ['*.authorization', '*.headers.authorization', '*.apiKey', '*.token'], censor: '[redacted]' },
      ...(scrub ? { hooks: { streamWrite: scrub } } : {}),
    },
    destination,
  );
  const withLogContext: LogContextRunner = (fields, work) => context.run(Object.freeze({ ...fields }), work);
  return { logger, withLogContext };
}

/**
 * The configured secrets (bot token, API keys, bearer tokens, …) out of every line, whatever
 * field carries them. Redact paths cannot reach them all: grammY's network error wraps
 * node-fetch's, whose message holds the request URL, and a Bot API URL holds the bot token
 * (`…/bot<token>/sendMessage`), so a failed send logged the token. Each secret is looked
 * for as written and as JSON escapes it, in the finished line.
 */
function secretScrubber(secrets: readonly (string | undefined)[]): ((line: string) => string) | undefined {
  // Shorter values are not secrets anyone configured (config requires 16+ for tokens and keys).
  const forms = [...new Set(secrets.filter((secret): secret is string => secret !== undefined && secret.length >= 8).flatMap((secret) => [secret, JSON.stringify(secret).slice(1, -1)]))];
  if (forms.length === 0) return undefined;
  // Longest first: a secret that contains another is replaced whole.
  forms.sort((first, second) => second.length - first.length);
  return (line) => {
    let scrubbed = line;
    for (const form of forms) if (scrubbed.includes(form)) scrubbed = scrubbed.replaceAll(form, '[redacted]');
    return scrubbed;
  };
}

// Bindings are fixed when a child is made, so each logger's keys are read once.
const boundKeysCache = new WeakMap<object, ReadonlySet<string>>();

function boundKeysOf(instance: Logger): ReadonlySet<string> {
  let keys = boundKeysCache.get(instance);
  if (!keys) {
    keys = new Set(Object.keys(instance.bindings()));
    boundKeysCache.set(instance, keys);
  }
  return keys;
}
