import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pino } from 'pino';
import { loadSecretKey } from '../../src/adapters/secrets/secret-key.js';
import { makeTempDir, removeTempDir } from '../helpers/temp-dir.js';
import { isVigilError } from '../../src/domain/errors.js';
import { mapPayload } from '../../src/app/webhooks/hook-payload.js';
import { SecretBox } from '../../src/app/webhooks/hook-secret-box.js';
import { Webhook } from 'standardwebhooks';
import { checkTimestamp, newHookSecret, verifyDelivery } from '../../src/app/webhooks/hook-signature.js';
import { parseTemplate, renderTemplate, TASK_TEXT_MAX_CHARS, TEMPLATE_VALUE_MAX_CHARS } from '../../src/app/webhooks/hook-template.js';

function codeOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (isVigilError(error)) return error.code;
    throw error;
  }
  throw new Error('expected a VigilError');
}

const values = (payload: Record<string, unknown>) => ({ payload, hook: { id: 'h1', name: 'CI' }, delivery: { id: 'd1' } });

describe('webhook task templates: whitelisted, bounded substitutions, no code', () => {
  it('renders payload fields, hook and delivery names', () => {
    const parts = parseTemplate('New event {{payload.kind}} from {{ payload.repo.name }} via {{hook.name}} ({{delivery.id}}, {{hook.id}})');
    expect(renderTemplate(parts, values({ kind: 'push', 'repo.name': 'acme/api' }))).toBe('New event push from acme/api via CI (d1, h1)');
  });

  it.each([
    ['an unknown root', 'Run {{process.env.HOME}}'],
    ['an expression', '{{ payload.a + payload.b }}'],
    ['a call', '{{constructor.constructor("return 1")()}}'],
    ['an unclosed placeholder', 'hi {{payload.kind'],
    ['a stray close', 'hi payload.kind}}'],
    ['an empty placeholder', 'hi {{}}'],
    ['an empty template', '   '],
  ])('refuses %s with VALIDATION_FAILED', (_name, template) => {
    expect(codeOf(() => parseTemplate(template))).toBe('VALIDATION_FAILED');
  });

  it('refuses a payload path outside the hook\'s payloadFields', () => {
    expect(codeOf(() => parseTemplate('{{payload.secret}}', ['kind']))).toBe('VALIDATION_FAILED');
    expect(parseTemplate('{{payload.kind}}', ['kind'])).toHaveLength(1);
  });

  it('never expands a value twice, and renders a missing field as nothing', () => {
    const parts = parseTemplate('[{{payload.a}}] [{{payload.missing}}]');
    expect(renderTemplate(parts, values({ a: '{{hook.id}}' }))).toBe('[{{hook.id}}] []');
  });

  it('bounds each value and the whole text, and drops control characters', () => {
    const parts = parseTemplate('{{payload.long}}');
    const rendered = renderTemplate(parts, values({ long: 'x'.repeat(10_000) }));
    expect(rendered.length).toBe(TEMPLATE_VALUE_MAX_CHARS);
    expect(rendered.endsWith('…')).toBe(true);
    const many = parseTemplate('{{payload.long}}'.repeat(20));
    expect(renderTemplate(many, values({ long: 'y'.repeat(1000) })).length).toBeLessThanOrEqual(TASK_TEXT_MAX_CHARS);
    expect(renderTemplate(parts, values({ long: 'a\u0000b\u001bc\nd' }))).toBe('abc\nd');
  });
});

describe('webhook payload mapping', () => {
  it('flattens nested objects into dotted paths, keeps scalars only, first 32 fields', () => {
    const payload = { kind: 'push', n: 3, ok: true, none: null, repo: { name: 'acme', owner: { login: 'ada' } }, list: [1, 2], 'odd key': 1, deep: { a: { b: { c: { d: 'too deep' } } } } };
    expect(mapPayload(payload, null)).toEqual({ kind: 'push', n: 3, ok: true, none: null, 'repo.name': 'acme', 'repo.owner.login': 'ada' });
    const wide = Object.fromEntries(Array.from({ length: 50 }, (_, index) => [`f${index}`, index]));
    expect(Object.keys(mapPayload(wide, null))).toHaveLength(32);
  });

  it('takes only the whitelisted paths, in their order', () => {
    expect(mapPayload({ a: 1, b: { c: 2 }, d: 3 }, ['b.c', 'a', 'missing'])).toEqual({ 'b.c': 2, a: 1 });
  });

  it('cuts long strings instead of refusing the event; ignores __proto__', () => {
    const mapped = mapPayload(JSON.parse('{"text":"' + 'z'.repeat(5000) + '","__proto__":{"polluted":true}}'), null);
    expect(String(mapped.text).length).toBe(1000);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.keys(mapped)).toEqual(['text']);
  });

  it('refuses a payload that is not a JSON object', () => {
    for (const payload of [[1], 'text', 3, null]) expect(codeOf(() => mapPayload(payload, null))).toBe('VALIDATION_FAILED');
  });
});

describe('webhook signatures (Standard Webhooks)', () => {
  const secret = newHookSecret();
  const body = Buffer.from('{"kind":"push"}');
  // The library checks its own window against the system clock, so these use the real time.
  const now = new Date();
  const timestamp = String(Math.floor(now.getTime() / 1000));
  const id = 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W';
  const sign = (key: string, msgId: string, seconds: string, payload: Buffer | string) => new Webhook(key).sign(msgId, new Date(Number(seconds) * 1000), payload);

  it('a new secret is whsec_ + base64 of 32 random bytes, usable by the library', () => {
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32);
    expect(newHookSecret()).not.toBe(secret);
  });

  it('accepts v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<raw body>"> and nothing else', () => {
    const signature = sign(secret, id, timestamp, body);
    expect(signature).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(verifyDelivery(secret, { id, timestamp, signature }, body, now)).toBe(id);
    // Several signatures (a sender rotating secrets): one match is enough.
    expect(verifyDelivery(secret, { id, timestamp, signature: `${sign(newHookSecret(), id, timestamp, body)} ${signature}` }, body, now)).toBe(id);
    for (const headers of [
      { id, signature, timestamp: String(Number(timestamp) + 1) },
      { id: 'msg_another', signature, timestamp }, // the id is signed: a replay under a new id fails
      { id, signature: sign(newHookSecret(), id, timestamp, body), timestamp },
      { id, signature: signature.slice(0, -2), timestamp },
      { id, signature: signature.replace('v1,', 'v2,'), timestamp },
      { id, signature: undefined, timestamp },
    ]) {
      expect(codeOf(() => verifyDelivery(secret, headers, body, now))).toBe('HOOK_SIGNATURE_INVALID');
    }
    expect(codeOf(() => verifyDelivery(secret, { id, signature, timestamp }, Buffer.from('{"kind":"push" }'), now))).toBe('HOOK_SIGNATURE_INVALID');
    expect(codeOf(() => verifyDelivery(secret, { id, signature, timestamp: undefined }, body, now))).toBe('HOOK_TIMESTAMP_STALE');
    expect(codeOf(() => verifyDelivery(secret, { id: undefined, signature, timestamp }, body, now))).toBe('VALIDATION_FAILED');
    expect(codeOf(() => verifyDelivery(secret, { id: 'bad id with spaces', signature, timestamp }, body, now))).toBe('VALIDATION_FAILED');
  });

  it('refuses timestamps more than 5 minutes off, either way', () => {
    const now = new Date(1_760_000_000_000);
    expect(() => checkTimestamp('1760000300', now)).not.toThrow();
    expect(() => checkTimestamp('1759999700', now)).not.toThrow();
    for (const stale of ['1760000301', '1759999699', 'abc', '', undefined, '1760000000.5']) expect(codeOf(() => checkTimestamp(stale, now))).toBe('HOOK_TIMESTAMP_STALE');
  });
});

describe('hook secrets at rest', () => {
  it('seals with AES-256-GCM bound to the hook id; another key or row does not open it', () => {
    const box = new SecretBox(randomBytes(32));
    const sealed = box.seal('vhs_the-secret', 'hook-1');
    expect(sealed).not.toContain('the-secret');
    expect(box.open(sealed, 'hook-1')).toBe('vhs_the-secret');
    expect(codeOf(() => box.open(sealed, 'hook-2'))).toBe('INTERNAL');
    expect(codeOf(() => new SecretBox(randomBytes(32)).open(sealed, 'hook-1'))).toBe('INTERNAL');
    const tampered = sealed.slice(0, -2) + (sealed.endsWith('A') ? 'BB' : 'AA');
    expect(codeOf(() => box.open(tampered, 'hook-1'))).toBe('INTERNAL');
    expect(box.seal('same', 'hook-1')).not.toBe(box.seal('same', 'hook-1')); // a fresh IV each time
  });
});

describe('the key that seals stored secrets', () => {
  const logger = pino({ level: 'silent' });

  it('without VIGIL_SECRETS_KEY: a random key file, created once with mode 0600, then reused', async () => {
    const dataDir = await makeTempDir();
    try {
      const [first, second] = await Promise.all([loadSecretKey({ configured: undefined, dataDir, logger }), loadSecretKey({ configured: undefined, dataDir, logger })]);
      expect(first.length).toBe(32);
      expect(second.equals(first)).toBe(true);
      expect((await loadSecretKey({ configured: undefined, dataDir, logger })).equals(first)).toBe(true);
      const file = join(dataDir, 'secrets.key');
      expect((await stat(file)).mode & 0o777).toBe(0o600);
      expect(Buffer.from((await readFile(file, 'utf8')).trim(), 'base64').equals(first)).toBe(true);
    } finally {
      await removeTempDir(dataDir);
    }
  });

  it('with VIGIL_SECRETS_KEY: the same key on every instance, no file', async () => {
    const dataDir = await makeTempDir();
    try {
      const configured = 'a-shared-secret-of-more-than-32-characters';
      const key = await loadSecretKey({ configured, dataDir, logger });
      expect(key.length).toBe(32);
      expect((await loadSecretKey({ configured, dataDir: '/nonexistent', logger })).equals(key)).toBe(true);
      await expect(stat(join(dataDir, 'secrets.key'))).rejects.toThrow();
    } finally {
      await removeTempDir(dataDir);
    }
  });
});
