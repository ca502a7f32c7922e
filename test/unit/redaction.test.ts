import { describe, expect, it } from 'vitest';
import {
  CIRCULAR_MARKER,
  MAX_REDACTION_DEPTH,
  REDACTED,
  SECRET_KEY_TERMS,
  SECRET_KEY_WORDS,
  SECRET_PATTERNS,
  TOO_DEEP_MARKER,
  isSecretKey,
  redact,
  redactString,
} from '../../src/domain/redaction.js';

// Realistic-looking fakes: the right shape, no real credential.
const secrets = {
  bearer: 'Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0',
  basic: 'Basic dXNlcjpodW50ZXIy',
  jwt: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c',
  openai: 'sk-abcdefghijklmnopqrstuvwxyz0123456789ABCD',
  anthropic: 'sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abc',
  openaiProject: 'sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789',
  github: 'ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789',
  githubOauth: 'gho_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789',
  githubPat: 'github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz',
  slackBot: 'xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx',
  slackUser: 'xoxp-123456789012-1234567890123-AbCdEfGhIjKl',
  aws: 'AKIAIOSFODNN7EXAMPLE',
  google: 'AIzaSyA1B2C3D4E5F6G7H8I9J0KLMNOPQRSTUVW',
  telegram: '123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw',
  pem: '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1234567890abcdef\nQWERTYUIOPasdfghjkl==\n-----END RSA PRIVATE KEY-----',
} as const;

describe('redaction: secret keys', () => {
  it.each([
    'token',
    'access_token',
    'refreshToken',
    'id_token',
    'BOT_TOKEN',
    'secret',
    'client_secret',
    'clientSecret',
    'webhook-secret',
    'password',
    'Password',
    'passwd',
    'pwd',
    'db_pass',
    'api key',
    'apikey',
    'APIKEY',
    'api_key',
    'apiKey',
    'x-api-key',
    'X-Api-Key',
    'authorization',
    'Authorization',
    'proxy-authorization',
    'auth',
    'auth_header',
    'cookie',
    'Set-Cookie',
    'private_key',
    'privateKey',
    'access_key',
    'AWS_SECRET_ACCESS_KEY',
    'session_id',
    'sessionId',
    'credential',
    'credentials',
    'pass\u200bword', // zero-width space cannot split the word
    'ｐａｓｓｗｏｒｄ', // fullwidth letters normalise to "password"
  ])('"%s" names a secret', (key) => {
    expect(isSecretKey(key)).toBe(true);
  });

  it.each([
    'token_count',
    'max_tokens',
    'tokens_used',
    'prompt_tokens',
    'completion_tokens',
    'tokenCount',
    'token_limit',
    'token_expires_at',
    'auth_type',
    'author',
    'run_id',
    'correlation_id',
    'requested_at_utc',
    'schedule_id',
    'fire_id',
    'hook_id',
    'delivery_id',
    'chat_id',
    'message_id',
    'from_user_id',
    'plan_id',
    'idle_ms',
    'priority',
    'trigger_type',
    'trigger_reason',
    'timer_id',
    'nonce',
    'description',
    'keyword',
    'passage',
    'monkey',
  ])('"%s" does not name a secret', (key) => {
    expect(isSecretKey(key)).toBe(false);
  });

  it('replaces the whole value under a secret key, at any depth and in arrays', () => {
    const input = {
      headers: { Authorization: 'whatever', 'X-Api-Key': 12345, accept: 'json' },
      accounts: [{ name: 'a', password: 'hunter2' }, { name: 'b', credentials: { user: 'u', key: 'k' } }],
      deep: { a: { b: { c: { client_secret: ['x', 'y'] } } } },
    };
    expect(redact(input)).toEqual({
      headers: { Authorization: REDACTED, 'X-Api-Key': REDACTED, accept: 'json' },
      accounts: [{ name: 'a', password: REDACTED }, { name: 'b', credentials: REDACTED }],
      deep: { a: { b: { c: { client_secret: REDACTED } } } },
    });
  });

  it('keeps numbers under quantity keys, booleans and null under secret keys, and redacts bare numbers', () => {
    const input = {
      token_count: 1200,
      max_tokens: 4096,
      tokens_used: 17,
      usage: { prompt_tokens: 10, completion_tokens: 20 },
      password_min_length: 12,
      password_set: true,
      token: null,
      password: 1234,
      session_id: 99n,
      token_count_text: '1200',
    };
    expect(redact(input)).toEqual({
      token_count: 1200,
      max_tokens: 4096,
      tokens_used: 17,
      usage: { prompt_tokens: 10, completion_tokens: 20 },
      password_min_length: 12,
      password_set: true,
      token: null,
      password: REDACTED,
      session_id: REDACTED,
      token_count_text: '1200',
    });
  });
});

describe('redaction: secret-looking values', () => {
  it.each(Object.entries(secrets))('a bare %s value is replaced', (_name, secret) => {
    const result = redactString(secret);
    expect(result).not.toContain(secret.slice(-12));
    expect(result).toContain(REDACTED);
  });

  it('replaces only the secret part of a longer string', () => {
    expect(redactString(`curl -H "Authorization: ${secrets.bearer}" https://x.test`)).toBe(
      'curl -H "Authorization: Bearer [redacted]" https://x.test',
    );
    expect(redactString(`use ${secrets.openai} for tests`)).toBe('use [redacted] for tests');
    expect(redactString(`https://api.telegram.org/bot${secrets.telegram}/sendMessage`)).toBe('https://api.telegram.org/bot[redacted]/sendMessage');
    expect(redactString('postgres://app:s3cr3t-pw@db.internal:5432/vigil')).toBe('postgres://app:[redacted]@db.internal:5432/vigil');
    expect(redactString(`key id ${secrets.aws} in us-east-1`)).toBe('key id [redacted] in us-east-1');
    expect(redactString(`before\n${secrets.pem}\nafter`)).toBe('before\n[redacted]\nafter');
    expect(redactString('login with password=hunter22 now')).toBe('login with password=[redacted] now');
  });

  it('redacts several secrets in one string', () => {
    const text = `a ${secrets.github} b ${secrets.slackBot} c ${secrets.jwt} d`;
    expect(redactString(text)).toBe('a [redacted] b [redacted] c [redacted] d');
  });

  it('leaves ordinary prose, ids and timestamps alone', () => {
    const ordinary = [
      'Basic information about the release',
      'the bearer of good news',
      'scikit-learn and risk-assessment tools',
      'run 4b3a0f59-b6c2-4c8c-9b2c-0d9d68bd9a10 at 2026-02-03T09:00:00Z',
      'meeting at 10:30, room 5',
      'max_tokens: 4096, token_count=12',
      'https://example.com/path?q=1',
    ];
    for (const text of ordinary) expect(redactString(text)).toBe(text);
  });

  it('redacts values nested in objects and arrays under harmless keys', () => {
    const input = { note: `deploy with ${secrets.anthropic}`, list: ['ok', secrets.google, { inner: secrets.openaiProject }] };
    expect(redact(input)).toEqual({ note: 'deploy with [redacted]', list: ['ok', REDACTED, { inner: REDACTED }] });
  });

  // One sample per pattern: a new pattern without a sample fails here, and each sample
  // must survive the quick pre-check that lets most strings skip the scans.
  const samples: Record<string, string> = {
    pem_private_key: secrets.pem,
    url_credentials: 'amqp://worker:pa55word@queue:5672',
    jwt: secrets.jwt,
    authorization_credentials: secrets.basic,
    anthropic_key: secrets.anthropic,
    openai_project_key: secrets.openaiProject,
    openai_key: secrets.openai,
    stripe_key: 'rk_live_AbCdEfGhIjKlMnOpQrSt1234',
    github_token: secrets.githubOauth,
    github_pat: secrets.githubPat,
    slack_token: secrets.slackUser,
    aws_access_key_id: 'ASIAIOSFODNN7EXAMPLE',
    google_api_key: secrets.google,
    telegram_bot_token: secrets.telegram,
    secret_assignment: 'X-Session-Id: 7d1f0c2a',
  };

  it('every pattern has a sample that it matches and redactString redacts', () => {
    expect(Object.keys(samples).sort()).toEqual(SECRET_PATTERNS.map((pattern) => pattern.name).sort());
    for (const { name, pattern } of SECRET_PATTERNS) {
      const sample = samples[name] ?? '';
      pattern.lastIndex = 0;
      expect(pattern.test(sample), name).toBe(true);
      pattern.lastIndex = 0;
      expect(redactString(`before ${sample} after`), name).toMatch(/^before .*\[redacted\].* after$/s);
    }
  });

  it('exports every pattern with a name and a description, for the docs', () => {
    expect(SECRET_PATTERNS.length).toBeGreaterThanOrEqual(10);
    for (const pattern of SECRET_PATTERNS) {
      expect(pattern.name).toMatch(/^[a-z_]+$/);
      expect(pattern.description.length).toBeGreaterThan(5);
      expect(pattern.pattern.global).toBe(true);
    }
    expect(SECRET_KEY_TERMS).toContain('password');
    expect(SECRET_KEY_WORDS).toContain('token');
  });
});

describe('redaction: shapes', () => {
  it('never mutates its input', () => {
    const input = { password: 'p', nested: { note: secrets.openai, list: [secrets.github] } };
    const before = structuredClone(input);
    const result = redact(input) as typeof input;
    expect(input).toEqual(before);
    expect(result).not.toBe(input);
    expect(result.nested).not.toBe(input.nested);
  });

  it('replaces cycles, keeps shared (non-cyclic) references as copies', () => {
    const shared = { value: 1 };
    const input: Record<string, unknown> = { a: shared, b: shared };
    input.self = input;
    const list: unknown[] = [1];
    list.push(list);
    input.list = list;
    expect(redact(input)).toEqual({ a: { value: 1 }, b: { value: 1 }, self: CIRCULAR_MARKER, list: [1, CIRCULAR_MARKER] });
  });

  it(`caps depth at ${MAX_REDACTION_DEPTH}`, () => {
    let deep: Record<string, unknown> = { leaf: 'bottom' };
    for (let level = 0; level < 20; level++) deep = { next: deep };
    let cursor = redact(deep);
    let depth = 0;
    while (typeof cursor === 'object' && cursor !== null) {
      cursor = (cursor as Record<string, unknown>).next;
      depth++;
    }
    expect(cursor).toBe(TOO_DEEP_MARKER);
    expect(depth).toBe(MAX_REDACTION_DEPTH);
  });

  it('turns non-JSON values into JSON data', () => {
    const input = {
      when: new Date('2026-02-03T09:00:00Z'),
      invalid: new Date(Number.NaN),
      big: 12345678901234567890n,
      fn: () => 1,
      sym: Symbol('s'),
      missing: undefined,
      nan: Number.NaN,
      list: [() => 1, undefined, Symbol('t'), 2],
      map: new Map<unknown, unknown>([['a', 1], ['token', 'x']]),
      set: new Set(['x', secrets.github]),
      bytes: new Uint8Array(3),
      error: new Error(`failed with ${secrets.openai}`),
    };
    const result = redact(input);
    expect(result).toEqual({
      when: '2026-02-03T09:00:00.000Z',
      invalid: null,
      big: '12345678901234567890',
      nan: null,
      list: [null, null, null, 2],
      map: { a: 1, token: REDACTED },
      set: ['x', REDACTED],
      bytes: '[binary 3 bytes]',
      error: { name: 'Error', message: 'failed with [redacted]' },
    });
    expect(JSON.parse(JSON.stringify(result))).toEqual(result);
  });

  it('copies a "__proto__" key as data, without changing the prototype', () => {
    const input = JSON.parse('{"__proto__": {"polluted": true}, "ok": 1}') as Record<string, unknown>;
    const result = redact(input) as Record<string, unknown>;
    expect(Object.getPrototypeOf(result)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(JSON.stringify(result)).toBe('{"__proto__":{"polluted":true},"ok":1}');
  });

  it('survives a throwing getter', () => {
    const input = {
      ok: 1,
      get broken(): never {
        throw new Error('nope');
      },
    };
    expect(redact(input)).toEqual({ ok: 1, broken: '[unreadable]' });
  });
});
