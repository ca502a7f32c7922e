/**
 * Redaction of secrets from data the model or a log will see (run metadata first of all:
 * a seed system never redacted it). `redact` returns a deep, JSON-safe copy; the input
 * is never touched.
 *
 * Two independent rules, both always applied:
 *
 * 1. Keys. A key names a secret when, after NFKC normalisation, splitting into words
 *    (camelCase, `_`, `-`, `.`, spaces, any other separator) and lower-casing:
 *    - the words joined together contain one of SECRET_KEY_TERMS (`X-Api-Key` →
 *      "xapikey" ⊃ "apikey"; `pass\u200Bword` → "password"), or
 *    - one word is one of SECRET_KEY_WORDS (`token`, `pwd`, `auth`, …) and no word is a
 *      SECRET_KEY_QUALIFIERS word. A qualifier says the key describes or measures a
 *      secret rather than holds it: `token_count`, `token_limit`, `token_expires_at`,
 *      `auth_type` are not secrets. Plural `tokens` is not a secret word at all, which is
 *      what LLM usage fields use (`max_tokens`, `tokens_used`, `prompt_tokens`).
 *    Under a secret key the whole value (object, array, string, number) becomes
 *    "[redacted]", except: booleans and null are kept (they cannot hold a secret and say
 *    whether one is present: `password_set: true`), and numbers are kept when a word of
 *    the key is a qualifier (`password_min_length: 12`). A bare number under a plain
 *    secret key (`password: 1234`, `session_id: 99`) is redacted.
 *    Over-redaction (`secretary`, `auth_method`) is accepted: a leaked secret costs more.
 *
 * 2. String values. Every string, whatever its key, has each match of SECRET_PATTERNS
 *    replaced; only the secret part of a longer string is replaced, and a pattern may keep
 *    a harmless prefix (`Bearer [redacted]`, `postgres://app:[redacted]@db`).
 *
 * Shape rules (so the copy is plain JSON data, I10): cycles become "[circular]"; values
 * nested deeper than MAX_REDACTION_DEPTH become "[too deep]"; Dates become ISO strings
 * (invalid ones null); bigints become decimal strings; NaN and ±Infinity become null;
 * functions, symbols and undefined are dropped from objects and become null in arrays
 * (as JSON.stringify does); Maps become objects, Sets arrays, binary data
 * "[binary N bytes]", Errors `{ name, message }`; a lone surrogate in a string or key
 * becomes U+FFFD, so the copy always encodes as valid UTF-8.
 */

export const REDACTED = '[redacted]';
export const CIRCULAR_MARKER = '[circular]';
export const TOO_DEEP_MARKER = '[too deep]';
export const UNREADABLE_MARKER = '[unreadable]';
/** Containers at this nesting depth (the root is 0) are replaced by TOO_DEEP_MARKER. */
export const MAX_REDACTION_DEPTH = 8;

/** Matched as substrings of the key's words joined together. */
export const SECRET_KEY_TERMS: readonly string[] = Object.freeze([
  'password',
  'passwd',
  'passphrase',
  'secret', // client_secret, webhook_secret, secret_key, …
  'apikey', // api_key, apiKey, x-api-key, APIKEY
  'privatekey',
  'privkey',
  'accesskey',
  'signingkey',
  'encryptionkey',
  'sessionid',
  'sessionkey',
  'sessiontoken',
  'credential', // credentials
  'authorization', // proxy-authorization
  'authheader',
  'cookie', // set-cookie
  'accesstoken',
  'refreshtoken',
  'idtoken',
  'authtoken',
  'bottoken',
  'apitoken',
  'bearertoken',
  'csrftoken',
  'xsrftoken',
  'connectionstring',
]);

/** Matched as whole words of the key, unless a qualifier word is present too. */
export const SECRET_KEY_WORDS: readonly string[] = Object.freeze(['token', 'pwd', 'pass', 'auth', 'jwt', 'otp', 'dsn']);

/** Words that make a key describe or measure a secret instead of holding one. */
export const SECRET_KEY_QUALIFIERS: readonly string[] = Object.freeze([
  'count',
  'counts',
  'limit',
  'limits',
  'max',
  'min',
  'maximum',
  'minimum',
  'length',
  'size',
  'total',
  'used',
  'usage',
  'remaining',
  'budget',
  'estimate',
  'estimated',
  'rate',
  'per',
  'number',
  'num',
  'ttl',
  'expires',
  'expiry',
  'expiration',
  'type',
  'kind',
  'scheme',
]);

export interface SecretPattern {
  readonly name: string;
  readonly description: string;
  /**
   * Global regular expression. When it has named groups `prefix` / `suffix`, those are
   * kept and only the rest of the match is replaced.
   */
  readonly pattern: RegExp;
  /** Optional second check on the matched secret, to spare ordinary prose. */
  readonly accept?: (secret: string) => boolean;
}

// A credential after "Bearer"/"Basic" is random-looking; "Basic information" is prose.
function looksRandom(text: string): boolean {
  return /[0-9\-._~+/=]/.test(text) || /[A-Z]/.test(text.slice(1));
}

/** Applied in this order to every string value. */
export const SECRET_PATTERNS: readonly SecretPattern[] = Object.freeze([
  {
    name: 'pem_private_key',
    description: 'PEM private key block (-----BEGIN … PRIVATE KEY----- … END), or its start when cut off',
    pattern: /-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END[A-Z0-9 ]*PRIVATE KEY-----|$)/g,
  },
  {
    name: 'url_credentials',
    description: 'password in a URL user-info part (scheme://user:password@host)',
    pattern: /(?<prefix>\b[a-z][a-z0-9+.-]*:\/\/[^\s:@/?#]*:)[^\s@/?#]+(?<suffix>@)/gi,
  },
  {
    name: 'jwt',
    description: 'JSON Web Token: three base64url segments, the header starting "eyJ"',
    pattern: /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*/g,
  },
  {
    name: 'authorization_credentials',
    description: 'credentials after a "Bearer" or "Basic" scheme word (the scheme word is kept)',
    pattern: /\b(?<prefix>(?:Bearer|Basic)\s+)[A-Za-z0-9\-._~+/]{8,}=*/gi,
    accept: looksRandom,
  },
  { name: 'anthropic_key', description: 'Anthropic API key (sk-ant-…)', pattern: /\bsk-ant-[A-Za-z0-9_-]{16,}/g },
  { name: 'openai_project_key', description: 'OpenAI project key (sk-proj-…)', pattern: /\bsk-proj-[A-Za-z0-9_-]{16,}/g },
  { name: 'openai_key', description: 'OpenAI-style secret key (sk-…)', pattern: /\bsk-[A-Za-z0-9_-]{16,}/g },
  { name: 'stripe_key', description: 'Stripe secret or restricted key (sk_live_…, rk_test_…)', pattern: /\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}/g },
  { name: 'github_token', description: 'GitHub token (ghp_, gho_, ghu_, ghs_, ghr_)', pattern: /\bgh[pousr]_[A-Za-z0-9]{20,}/g },
  { name: 'github_pat', description: 'GitHub fine-grained personal access token (github_pat_…)', pattern: /\bgithub_pat_[A-Za-z0-9_]{20,}/g },
  { name: 'slack_token', description: 'Slack token (xoxb-, xoxp-, xoxa-, xoxo-, xoxr-, xoxs-)', pattern: /\bxox[abposr]-[A-Za-z0-9-]{10,}/g },
  { name: 'aws_access_key_id', description: 'AWS access key id (AKIA…, ASIA…)', pattern: /\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b/g },
  { name: 'google_api_key', description: 'Google API key (AIza…)', pattern: /\bAIza[A-Za-z0-9_-]{35}/g },
  {
    name: 'telegram_bot_token',
    description: 'Telegram bot token (123456789:AA…), also inside a bot API URL',
    pattern: /(?<![0-9])[0-9]{6,12}:AA[A-Za-z0-9_-]{30,}/g,
  },
  {
    name: 'secret_assignment',
    description: 'value after a secret name and "=" or ":" in text (password=…, "api_key": "…", Cookie: …)',
    pattern:
      /(?<prefix>(?<![A-Za-z0-9])(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?token|refresh[_-]?token|auth[_-]?token|private[_-]?key|session[_-]?id|set-cookie|cookie)["']?\s*[:=]\s*["']?)[^\s"'&,;]{3,}/gi,
  },
]);

/**
 * Literals of which every SECRET_PATTERNS match contains at least one (case aside). A
 * string with none of them cannot match any pattern and skips the pattern scans, which
 * is most strings. Adding a pattern means adding its literal here.
 */
const MAY_HOLD_SECRET =
  /-----BEGIN|:\/\/|eyJ|bearer|basic|sk-|[sr]k_|gh[pousr]_|github_pat_|xox|A[KSBC][IC]A|AIza|\d:AA|passw|pwd|secret|token|api[_-]?key|private|session|cookie/i;

const qualifierSet = new Set(SECRET_KEY_QUALIFIERS);
const secretWordSet = new Set(SECRET_KEY_WORDS);
const secretTermPattern = new RegExp(SECRET_KEY_TERMS.join('|'));
const SIMPLE_KEY = /^[a-z0-9_]*$/;

function keyWords(key: string): string[] {
  // snake_case ASCII keys (almost all of them) need no normalising or case splitting.
  if (SIMPLE_KEY.test(key)) return key.split('_').filter((word) => word.length > 0);
  return key
    .normalize('NFKC')
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2') // apiKey → api Key
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2') // APIKey → API Key
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((word) => word.length > 0);
}

/** Whether a key names a secret (rule 1 above). */
export function isSecretKey(key: string): boolean {
  const words = keyWords(key);
  if (secretTermPattern.test(words.join(''))) return true;
  return words.some((word) => secretWordSet.has(word)) && !words.some((word) => qualifierSet.has(word));
}

function namesQuantity(key: string): boolean {
  return keyWords(key).some((word) => qualifierSet.has(word));
}

/** Replace every secret-looking part of a string (rule 2 above). */
export function redactString(text: string): string {
  let result = wellFormed(text);
  if (!MAY_HOLD_SECRET.test(result)) return result;
  for (const { pattern, accept } of SECRET_PATTERNS) {
    pattern.lastIndex = 0;
    result = result.replace(pattern, (...args: unknown[]) => {
      const match = args[0] as string;
      const groups = args[args.length - 1];
      const named = typeof groups === 'object' && groups !== null ? (groups as Record<string, string | undefined>) : {};
      const prefix = named.prefix ?? '';
      const suffix = named.suffix ?? '';
      const secret = match.slice(prefix.length, match.length - suffix.length);
      if (accept !== undefined && !accept(secret)) return match;
      return `${prefix}${REDACTED}${suffix}`;
    });
  }
  return result;
}

const ANY_SURROGATE = /[\ud800-\udfff]/;

// A lone surrogate cannot be encoded as UTF-8 (a provider API may reject it): U+FFFD.
function wellFormed(text: string): string {
  if (!ANY_SURROGATE.test(text)) return text;
  return text.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');
}

const OMIT = Symbol('omit');

/** A deep, JSON-safe copy of `value` with secrets replaced by "[redacted]". */
export function redact(value: unknown): unknown {
  const copied = copy(value, 0, new Set<object>());
  return copied === OMIT ? null : copied;
}

function copy(value: unknown, depth: number, ancestors: Set<object>): unknown {
  switch (typeof value) {
    case 'string':
      return redactString(value);
    case 'number':
      return Number.isFinite(value) ? value : null;
    case 'boolean':
      return value;
    case 'bigint':
      return value.toString();
    case 'undefined':
    case 'function':
    case 'symbol':
      return OMIT;
    default:
      break;
  }
  if (value === null) return null;
  const object = value as object;
  if (ancestors.has(object)) return CIRCULAR_MARKER;
  if (object instanceof Date) return Number.isNaN(object.getTime()) ? null : object.toISOString();
  if (object instanceof RegExp) return redactString(String(object));
  if (ArrayBuffer.isView(object)) return `[binary ${object.byteLength} bytes]`;
  if (object instanceof ArrayBuffer) return `[binary ${object.byteLength} bytes]`;
  if (depth >= MAX_REDACTION_DEPTH) return TOO_DEEP_MARKER;

  ancestors.add(object);
  try {
    if (Array.isArray(object) || object instanceof Set) {
      const items: unknown[] = [];
      for (const item of object as Iterable<unknown>) {
        const copied = copy(item, depth + 1, ancestors);
        items.push(copied === OMIT ? null : copied);
      }
      return items;
    }
    if (object instanceof Error) {
      return copyEntries([['name', object.name], ['message', object.message]], depth, ancestors);
    }
    if (object instanceof Map) {
      const entries: Array<[string, unknown]> = [];
      for (const [key, item] of object) {
        if (typeof key === 'string' || typeof key === 'number' || typeof key === 'boolean' || typeof key === 'bigint') entries.push([String(key), item]);
      }
      return copyEntries(entries, depth, ancestors);
    }
    const entries: Array<[string, unknown]> = [];
    for (const key of Object.keys(object)) {
      try {
        entries.push([key, (object as Record<string, unknown>)[key]]);
      } catch {
        entries.push([key, UNREADABLE_MARKER]); // a throwing getter must not break redaction
      }
    }
    return copyEntries(entries, depth, ancestors);
  } finally {
    ancestors.delete(object);
  }
}

function copyEntries(entries: ReadonlyArray<readonly [string, unknown]>, depth: number, ancestors: Set<object>): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  for (const [rawKey, item] of entries) {
    const key = wellFormed(rawKey);
    const copied = isSecretKey(key) ? secretValue(key, item) : copy(item, depth + 1, ancestors);
    if (copied === OMIT) continue;
    // A plain assignment of "__proto__" would change the copy's prototype instead.
    if (key === '__proto__') Object.defineProperty(result, key, { value: copied, enumerable: true, writable: true, configurable: true });
    else result[key] = copied;
  }
  return result;
}

function secretValue(key: string, value: unknown): unknown {
  if (value === undefined || typeof value === 'function' || typeof value === 'symbol') return OMIT;
  if (value === null || typeof value === 'boolean') return value;
  if ((typeof value === 'number' || typeof value === 'bigint') && namesQuantity(key)) {
    return typeof value === 'bigint' ? value.toString() : Number.isFinite(value) ? value : null;
  }
  return REDACTED;
}
