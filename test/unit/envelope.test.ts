import { HumanMessage } from '@langchain/core/messages';
import { describe, expect, it } from 'vitest';
import { isVigilError } from '../../src/domain/errors.js';
import { classifyMessage } from '../../src/domain/message-metadata.js';
import {
  DEFAULT_ENVELOPE_MAX_BYTES,
  DROP_ORDER,
  ENVELOPE_KEY,
  MIN_KEPT_STRING_BYTES,
  PROTECTED_KEYS,
  buildEnvelope,
  truncationMarker,
} from '../../src/domain/envelope/build-envelope.js';
import type { Envelope } from '../../src/domain/envelope/build-envelope.js';
import {
  ENVELOPE_KWARG,
  envelopeMessageFields,
  isEnvelopeMessage,
  newRunNonce,
  placeEnvelope,
  systemPromptRule,
  withSystemPromptRule,
} from '../../src/domain/envelope/envelope-marker.js';
import type { MarkableMessage } from '../../src/domain/envelope/envelope-marker.js';
import { jsonStringBytes, jsonStringPrefix, toWellFormed, utf8ByteLength, utf8Prefix } from '../../src/domain/envelope/utf8.js';

const nonce = 'Qm9vdHN0cmFwTm9uY2UxMjM';
const bytesOf = (text: string) => Buffer.byteLength(text, 'utf8');

type Body = Record<string, unknown>;
function bodyOf(envelope: Envelope): Body {
  const parsed = JSON.parse(envelope.json) as Record<string, unknown>;
  expect(Object.keys(parsed)).toEqual([ENVELOPE_KEY]);
  return parsed[ENVELOPE_KEY] as Body;
}

// The checks every envelope must pass, whatever the stage (I4).
function expectBounded(envelope: Envelope, maxBytes = DEFAULT_ENVELOPE_MAX_BYTES): Body {
  expect(envelope.bytes).toBe(bytesOf(envelope.json));
  expect(envelope.bytes).toBeLessThanOrEqual(maxBytes);
  const body = bodyOf(envelope);
  expect(body.nonce).toBe(envelope.nonce);
  expect(body.trigger).toBe(envelope.trigger);
  for (const text of stringsIn(body)) expect(isWellFormed(text), text).toBe(true);
  return body;
}

function isWellFormed(text: string): boolean {
  return !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(text);
}

function stringsIn(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(stringsIn);
  if (typeof value === 'object' && value !== null) return Object.entries(value).flatMap(([key, item]) => [key, ...stringsIn(item)]);
  return [];
}

const cronMeta = {
  trigger: 'cron',
  run_id: 'run_01HZX3',
  requested_at_utc: '2026-02-03T09:00:02Z',
  correlation_id: 'corr-4b3a0f59',
  schedule_id: '4b3a0f59-b6c2-4c8c-9b2c-0d9d68bd9a10',
  fire_id: 'c6d9f1a6-0f1b-4f9b-a3a8-1d6e7a2e9c01',
  scheduled_for_utc: '2026-02-03T09:00:00Z',
};

describe('envelope stage full', () => {
  it('I4: a small meta is serialised whole, core keys first and the nonce last', () => {
    const envelope = buildEnvelope(cronMeta, { nonce });
    expect(envelope.stage).toBe('full');
    expect(envelope.dropped).toEqual([]);
    expect(envelope.cut).toEqual([]);
    const body = expectBounded(envelope);
    expect(body).toEqual({ ...cronMeta, nonce });
    expect(Object.keys(body).slice(0, 3)).toEqual(['trigger', 'correlation_id', 'run_id']);
    expect(Object.keys(body).at(-1)).toBe('nonce');
    expect(envelope.json).not.toContain('\n'); // one compact line: fewer bytes
  });

  it('I4: the server nonce replaces any nonce in the meta', () => {
    const envelope = buildEnvelope({ ...cronMeta, nonce: 'attacker-chosen' }, { nonce });
    expect(bodyOf(envelope).nonce).toBe(nonce);
    expect(envelope.json).not.toContain('attacker-chosen');
  });

  it('does not mutate the meta', () => {
    const meta = { ...cronMeta, payload: { body: 'x'.repeat(6000) }, token: 'abc' };
    const before = structuredClone(meta);
    buildEnvelope(meta, { nonce });
    expect(meta).toEqual(before);
  });

  it('rejects a meta without a trigger and a nonce that is not base64url (programming errors)', () => {
    for (const run of [
      () => buildEnvelope({ run_id: 'r' }, { nonce }),
      () => buildEnvelope(cronMeta, { nonce: '' }),
      () => buildEnvelope(cronMeta, { nonce: 'has space' }),
      () => buildEnvelope(cronMeta, { nonce, maxBytes: 0 }),
    ]) {
      try {
        run();
        expect.unreachable();
      } catch (error) {
        expect(isVigilError(error) && error.code).toBe('INTERNAL');
      }
    }
  });
});

describe('envelope redaction', () => {
  it('I4: secrets are redacted by key and by value, nested and embedded', () => {
    const meta = {
      ...cronMeta,
      api_key: 'plain-looking-value',
      headers: { Authorization: 'Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0', accept: 'application/json' },
      note: 'deploy with sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123 then report',
      targets: [{ url: 'postgres://app:s3cr3t-pw@db:5432/x' }],
      token_count: 812,
    };
    const envelope = buildEnvelope(meta, { nonce });
    expect(envelope.stage).toBe('full');
    const body = bodyOf(envelope);
    expect(body.api_key).toBe('[redacted]');
    expect(body.headers).toEqual({ Authorization: '[redacted]', accept: 'application/json' });
    expect(body.note).toBe('deploy with [redacted] then report');
    expect(body.targets).toEqual([{ url: 'postgres://app:[redacted]@db:5432/x' }]);
    expect(body.token_count).toBe(812);
    for (const secret of ['plain-looking-value', '9f8e7d6c', 'sk-ant', 's3cr3t']) expect(envelope.json).not.toContain(secret);
  });

  it('I4: redaction runs before truncation, so a cut never leaves half a secret', () => {
    // Cut first, "sk-abcdefghijklm…" would be too short for the key pattern and leak.
    const meta = { ...cronMeta, note: `sk-abcdefghijklmnopqrstuvwxyz012345 ${'y'.repeat(6000)}` };
    const envelope = buildEnvelope(meta, { nonce });
    expect(envelope.stage).toBe('strings_cut');
    expect(envelope.json).not.toContain('sk-');
    expect(bodyOf(envelope).note).toMatch(/^\[redacted\] y+…\[truncated \d+ bytes\]$/);
  });
});

describe('envelope stage strings_cut', () => {
  const long = {
    ...cronMeta,
    trigger: 'webhook',
    hook_id: 'hook_github',
    delivery_id: 'd-1',
    payload: {
      title: 'Release notes 😀'.repeat(150), // 4-byte emoji: surrogate pairs
      body: 'é"\n'.repeat(1500), // 2-byte letters and characters JSON escapes
      tags: ['short', 'z'.repeat(2500)],
    },
    summary: 's'.repeat(300),
  };

  it('I4: long strings are cut to a fair share, longest first, within 4096 bytes', () => {
    const envelope = buildEnvelope(long, { nonce });
    expect(envelope.stage).toBe('strings_cut');
    expect(envelope.dropped).toEqual([]);
    expect(envelope.cut.sort()).toEqual(['payload.body', 'payload.tags.1', 'payload.title']);
    const body = expectBounded(envelope);
    const payload = body.payload as { title: string; body: string; tags: string[] };
    // The shorter strings were not needed: untouched.
    expect(body.summary).toBe(long.summary);
    expect(payload.tags[0]).toBe('short');
    // Every cut string keeps a prefix of the original and says how many bytes went.
    const originals = { title: long.payload.title, body: long.payload.body, tag: long.payload.tags[1] as string };
    const kept: number[] = [];
    for (const [name, value] of [['title', payload.title], ['body', payload.body], ['tag', payload.tags[1]]] as const) {
      const match = /^([\s\S]*)…\[truncated (\d+) bytes\]$/.exec(value ?? '');
      expect(match, name).not.toBeNull();
      const [, prefix = '', removed = ''] = match ?? [];
      const original = originals[name];
      expect(original.startsWith(prefix)).toBe(true);
      expect(bytesOf(prefix) + Number(removed)).toBe(bytesOf(original));
      kept.push(jsonStringBytes(prefix));
    }
    // A fair share: the cut strings keep (almost) the same number of envelope bytes; a
    // character (or JSON escape) that does not fit is left out whole.
    expect(Math.min(...kept)).toBeGreaterThanOrEqual(MIN_KEPT_STRING_BYTES);
    expect(Math.max(...kept) - Math.min(...kept)).toBeLessThanOrEqual(5);
    // Close to the limit: the cap is the largest that fits, not a blunt cut.
    expect(envelope.bytes).toBeGreaterThan(DEFAULT_ENVELOPE_MAX_BYTES - 200);
  });

  it('I4: protected keys are never cut', () => {
    const envelope = buildEnvelope({ ...long, correlation_id: 'c'.repeat(1000) }, { nonce });
    expect(envelope.stage).toBe('strings_cut');
    expect(bodyOf(envelope).correlation_id).toBe('c'.repeat(1000));
  });

  it('never cuts inside a surrogate pair', () => {
    for (let maxBytes = 300; maxBytes < 400; maxBytes++) {
      const envelope = buildEnvelope({ trigger: 'cron', note: '😀'.repeat(200) }, { nonce, maxBytes });
      expect(envelope.stage).toBe('strings_cut');
      expectBounded(envelope, maxBytes);
    }
  });

  it('counts UTF-8 bytes, not UTF-16 units', () => {
    expect(utf8ByteLength('aé€😀')).toBe(1 + 2 + 3 + 4);
    expect(utf8ByteLength('\ud800')).toBe(3); // lone surrogate: U+FFFD
    expect(utf8Prefix('a😀b', 4)).toBe('a');
    expect(utf8Prefix('a😀b', 5)).toBe('a😀');
    expect(utf8Prefix('éé', 3)).toBe('é');
    const sample = 'Grüße 😀 from 東京 ✓'.repeat(20);
    expect(utf8ByteLength(sample)).toBe(bytesOf(sample));
  });

  it('counts JSON-escaped bytes the way JSON.stringify writes them', () => {
    for (const text of ['plain', 'quote " and \\ backslash', 'tab\tnew\nline\u0001\u001f', 'é😀\u2028', 'lone \ud800 surrogate', '']) {
      expect(jsonStringBytes(text), JSON.stringify(text)).toBe(bytesOf(JSON.stringify(text)) - 2);
    }
    expect(jsonStringPrefix('ab"cd', 3)).toBe('ab');
    expect(jsonStringPrefix('ab"cd', 4)).toBe('ab"');
    expect(toWellFormed('a\ud800b😀\udc00')).toBe('a\ufffdb😀\ufffd');
  });
});

describe('envelope stage keys_dropped', () => {
  // Every known key, each short: cutting strings cannot help, so keys must go.
  const everyKey: Record<string, unknown> = {
    trigger: 'heartbeat',
    run_id: 'run_01HZX3',
    correlation_id: 'corr-4b3a0f59',
    requested_at_utc: '2026-02-03T09:00:02Z',
    payload: { event: 'push', commits: 3 },
    trigger_reason: 'idle too long',
    delivery_id: 'd-1',
    fire_id: 'f-1',
    message_id: 8812,
    timer_id: 't-1',
    from_user_id: 28036192,
    chat_id: -1001234567890,
    idle_ms: 300000,
    plan_id: 'plan_9',
    hook_id: 'hook_1',
    schedule_id: 'sch_1',
    channel: 'telegram',
    chat_type: 'private',
    priority: 'high',
    scheduled_for_utc: '2026-02-03T09:00:00Z',
    trigger_type: 'check_in',
    zeta_extra: 1,
    alpha_extra: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
  };

  it('DROP_ORDER lists every schema key except the protected ones, once', () => {
    expect(new Set(DROP_ORDER).size).toBe(DROP_ORDER.length);
    for (const key of PROTECTED_KEYS) expect(DROP_ORDER).not.toContain(key);
    const schemaKeys = Object.keys(everyKey).filter((key) => !key.endsWith('_extra') && !PROTECTED_KEYS.includes(key));
    expect([...DROP_ORDER].sort()).toEqual(schemaKeys.sort());
  });

  it('I4: the documented importance order: bulky and free-form first, identifiers next, behaviour last', () => {
    expect(DROP_ORDER).toEqual([
      'payload',
      'trigger_reason',
      'delivery_id',
      'fire_id',
      'message_id',
      'timer_id',
      'from_user_id',
      'chat_id',
      'requested_at_utc',
      'idle_ms',
      'plan_id',
      'hook_id',
      'schedule_id',
      'channel',
      'chat_type',
      'priority',
      'scheduled_for_utc',
      'trigger_type',
    ]);
    const rank = (key: string) => DROP_ORDER.indexOf(key);
    for (const behaviour of ['trigger_type', 'scheduled_for_utc', 'priority', 'chat_type']) {
      for (const detail of ['payload', 'trigger_reason', 'delivery_id', 'fire_id', 'message_id', 'requested_at_utc']) expect(rank(behaviour)).toBeGreaterThan(rank(detail));
    }
  });

  it('I4: keys go one at a time, unknown keys (largest first) and then by DROP_ORDER; core keys stay', () => {
    const expectedOrder = ['alpha_extra', 'zeta_extra', ...DROP_ORDER];
    const full = buildEnvelope(everyKey, { nonce });
    expect(full.stage).toBe('full');
    const stages = new Set<string>();
    // Shrink the limit byte by byte: the dropped keys are always a prefix of the order,
    // and each drop happens only when needed.
    for (let maxBytes = full.bytes - 1; maxBytes > 100; maxBytes--) {
      const envelope = buildEnvelope(everyKey, { nonce, maxBytes });
      stages.add(envelope.stage);
      if (envelope.stage === 'stub') break;
      expect(envelope.stage).toBe('keys_dropped');
      const body = expectBounded(envelope, maxBytes);
      expect(envelope.dropped).toEqual(expectedOrder.slice(0, envelope.dropped.length));
      // Exactly the dropped keys are gone; the core keys are all still there.
      const kept = Object.keys(everyKey).filter((key) => !envelope.dropped.includes(key));
      expect(Object.keys(body).sort()).toEqual([...kept, 'nonce', 'truncated', 'truncated_fields'].sort());
      expect(body.truncated_fields).toEqual(envelope.dropped);
      // Minimal: putting back the last dropped key (the notice still saying what went) would not fit.
      const last = envelope.dropped.at(-1) ?? '';
      const withLast = JSON.stringify({ [ENVELOPE_KEY]: { ...body, [last]: everyKey[last], truncated_fields: envelope.dropped.slice(0, -1) } });
      expect(bytesOf(withLast)).toBeGreaterThan(maxBytes);
    }
    expect([...stages]).toEqual(['keys_dropped', 'stub']);
  });

  it('I4: a realistic oversized meta at 4096 bytes drops unknown bulk first', () => {
    const meta: Record<string, unknown> = { ...cronMeta };
    for (let index = 0; index < 400; index++) meta[`label_${String(index).padStart(3, '0')}`] = index; // many small keys: nothing to cut
    const envelope = buildEnvelope(meta, { nonce });
    expect(envelope.stage).toBe('keys_dropped');
    const body = expectBounded(envelope);
    expect(envelope.dropped.length).toBeGreaterThan(0);
    expect(envelope.dropped.every((key) => key.startsWith('label_'))).toBe(true);
    for (const key of Object.keys(cronMeta)) expect(body[key]).toBe(cronMeta[key as keyof typeof cronMeta]);
  });

  it('I4: strings are cut before any key is dropped', () => {
    const meta: Record<string, unknown> = { ...cronMeta, trigger_reason: 'n'.repeat(3000) };
    for (let index = 0; index < 300; index++) meta[`label_${index}`] = index;
    const envelope = buildEnvelope(meta, { nonce });
    expect(envelope.stage).toBe('keys_dropped');
    expect(envelope.cut).toEqual(['trigger_reason']);
    expect(envelope.dropped.every((key) => key.startsWith('label_'))).toBe(true);
    expect(bodyOf(envelope).trigger_reason).toMatch(/^n{16,}…\[truncated \d+ bytes\]$/);
    expectBounded(envelope);
  });
});

describe('envelope stage stub', () => {
  it('I4: when core keys alone are too big, the stub keeps trigger, correlation_id and nonce', () => {
    const envelope = buildEnvelope({ ...cronMeta, run_id: 'r'.repeat(5000) }, { nonce });
    expect(envelope.stage).toBe('stub');
    expect(bodyOf(envelope)).toEqual({
      trigger: 'cron',
      correlation_id: cronMeta.correlation_id,
      truncated: true,
      truncated_fields: ['run_id', 'requested_at_utc', 'schedule_id', 'fire_id', 'scheduled_for_utc'],
      nonce,
    });
    expect(envelope.dropped.sort()).toEqual(['fire_id', 'requested_at_utc', 'run_id', 'schedule_id', 'scheduled_for_utc']);
    expectBounded(envelope);
  });

  it('I4: a correlation_id too big for the stub is left out of it', () => {
    const envelope = buildEnvelope({ trigger: 'cron', correlation_id: 'c'.repeat(5000) }, { nonce });
    expect(envelope.stage).toBe('stub');
    expect(bodyOf(envelope)).toEqual({ trigger: 'cron', truncated: true, truncated_fields: ['correlation_id'], nonce });
    expect(envelope.dropped).toEqual(['correlation_id']);
  });

  it('a stub that cannot fit is a programming error', () => {
    try {
      buildEnvelope(cronMeta, { nonce, maxBytes: 40 });
      expect.unreachable();
    } catch (error) {
      expect(isVigilError(error) && error.code).toBe('INTERNAL');
    }
  });
});

// What the system prompt promises: a truncated envelope says so, and which fields.
function expectTruncationNotice(envelope: Envelope): void {
  const body = bodyOf(envelope);
  if (envelope.stage === 'full') {
    expect(body).not.toHaveProperty('truncated');
    expect(body).not.toHaveProperty('truncated_fields');
    return;
  }
  expect(body.truncated).toBe(true);
  const fields = body.truncated_fields as string[] | undefined;
  const more = (body.truncated_fields_more as number | undefined) ?? 0;
  const lost = [...new Set([...envelope.cut.map((path) => path.split('.')[0]), ...envelope.dropped])];
  if (fields === undefined) {
    expect(envelope.stage).toBe('stub'); // only a stub too tight for the list goes without it
  } else {
    expect(new Set(fields)).toEqual(new Set(lost.slice(0, fields.length)));
    expect(fields.length + more).toBe(lost.length);
  }
  // The nonce stays the last key (I4: where a reader looks for the server's key).
  expect(Object.keys(body).at(-1)).toBe('nonce');
}

describe('envelope truncated flag (the system prompt promises it)', () => {
  it('I4: cut strings set "truncated": true and name their fields, within 4096 bytes', () => {
    const envelope = buildEnvelope({ ...cronMeta, trigger_reason: 'n'.repeat(5000), payload: { body: 'b'.repeat(5000), small: 'ok' } }, { nonce });
    expect(envelope.stage).toBe('strings_cut');
    const body = expectBounded(envelope);
    expect(body.truncated).toBe(true);
    expect(body.truncated_fields).toEqual(['trigger_reason', 'payload']);
    expect(Object.keys(body).at(-1)).toBe('nonce');
    expectTruncationNotice(envelope);
  });

  it('I4: dropped keys set "truncated": true and are listed, and the notice fits the 4096-byte bound exactly', () => {
    for (let labels = 300; labels <= 420; labels += 7) {
      const meta: Record<string, unknown> = { ...cronMeta };
      for (let index = 0; index < labels; index++) meta[`label_${String(index).padStart(3, '0')}`] = index;
      const envelope = buildEnvelope(meta, { nonce });
      expect(envelope.stage).toBe('keys_dropped');
      const body = expectBounded(envelope);
      expect(body.truncated).toBe(true);
      expectTruncationNotice(envelope);
    }
  });

  it('I4: a long list of dropped fields is bounded and counted', () => {
    const meta: Record<string, unknown> = { ...cronMeta };
    for (let index = 0; index < 2000; index++) meta[`label_${String(index).padStart(4, '0')}`] = index;
    const envelope = buildEnvelope(meta, { nonce });
    const body = expectBounded(envelope);
    expect(body.truncated).toBe(true);
    expect(Buffer.byteLength(JSON.stringify(body.truncated_fields))).toBeLessThanOrEqual(512);
    expect(body.truncated_fields_more).toBeGreaterThan(0);
    expectTruncationNotice(envelope);
  });

  it('I4: a meta cannot set or forge the truncation keys; a full envelope has none', () => {
    const full = buildEnvelope({ ...cronMeta, truncated: true, truncated_fields: ['x'], truncated_fields_more: 3 }, { nonce });
    expect(full.stage).toBe('full');
    expectTruncationNotice(full);
    const cut = buildEnvelope({ ...cronMeta, truncated: false, trigger_reason: 'n'.repeat(5000) }, { nonce });
    expect(bodyOf(cut).truncated).toBe(true);
    expect(bodyOf(cut).truncated_fields).toEqual(['trigger_reason']);
  });
});

describe('envelope bounds hold for any input', () => {
  // A small deterministic generator: the same cases on every run.
  function random(seed: number): () => number {
    let state = seed >>> 0;
    return () => {
      state = (state * 1664525 + 1013904223) >>> 0;
      return state / 2 ** 32;
    };
  }
  const alphabet = ['a', 'Z', '0', ' ', '"', '\\', '\n', '\u0001', 'é', '€', '東', '😀', '\ud800', '…'];

  it('I4: 250 random metas stay valid JSON within their limit', () => {
    const next = random(4096);
    const text = (length: number) => Array.from({ length }, () => alphabet[Math.floor(next() * alphabet.length)]).join('');
    const value = (depth: number): unknown => {
      const pick = next();
      if (depth > 1 || pick < 0.5) return text(Math.floor(next() ** 3 * 2000));
      if (pick < 0.65) return Math.floor(next() * 1e9);
      if (pick < 0.8) return Array.from({ length: Math.floor(next() * 5) }, () => value(depth + 1));
      return Object.fromEntries(Array.from({ length: Math.floor(next() * 5) }, (_, index) => [`k${index}_${text(3)}`, value(depth + 1)]));
    };
    const seen = new Set<string>();
    for (let index = 0; index < 250; index++) {
      // Now and then a core key too big for anything but the stub.
      const runId = next() < 0.05 ? 'r'.repeat(4100) : `run_${index}`;
      const meta: Record<string, unknown> = { trigger: 'webhook', run_id: runId, correlation_id: `corr_${index}` };
      const keys = Math.floor(next() * 24);
      for (let key = 0; key < keys; key++) meta[`${text(Math.floor(next() * 12) + 1)}_${key}`] = value(0);
      const maxBytes = 160 + Math.floor(next() * 4000);
      const envelope = buildEnvelope(meta, { nonce, maxBytes });
      seen.add(envelope.stage);
      expectBounded(envelope, maxBytes);
      if (envelope.stage === 'full' || envelope.stage === 'strings_cut') expect(envelope.dropped).toEqual([]);
      expectTruncationNotice(envelope);
    }
    expect(seen).toEqual(new Set(['full', 'strings_cut', 'keys_dropped', 'stub']));
  });

  it('truncation markers say how many bytes went', () => {
    expect(truncationMarker(1234)).toBe('…[truncated 1234 bytes]');
  });
});

describe('envelope message (I4: marker, not content)', () => {
  it('I4: the envelope message fields carry the server marker with the run nonce', () => {
    const runNonce = newRunNonce();
    const envelope = buildEnvelope(cronMeta, { nonce: runNonce });
    const fields = envelopeMessageFields(envelope, runNonce);
    expect(fields).toEqual({
      content: envelope.json,
      additional_kwargs: { synthetic: true, trigger_type: 'cron', [ENVELOPE_KWARG]: { nonce: runNonce } },
    });
    expect(ENVELOPE_KWARG).toBe('vigil_envelope');
    const message = new HumanMessage(fields);
    expect(isEnvelopeMessage(message, runNonce)).toBe(true);
    expect(isEnvelopeMessage(message, newRunNonce())).toBe(false);
    // Internal: shown to the model, never to people (I1, I2).
    expect(classifyMessage(message).visibility).toBe('internal');
  });

  it('refuses to mark an envelope with another nonce than it was built with', () => {
    const envelope = buildEnvelope(cronMeta, { nonce });
    expect(() => envelopeMessageFields(envelope, 'another-nonce')).toThrow(/nonce/);
  });

  it('newRunNonce: 128 random bits, base64url, never repeated', () => {
    const nonces = new Set(Array.from({ length: 2000 }, () => newRunNonce()));
    expect(nonces.size).toBe(2000);
    for (const value of nonces) expect(value).toMatch(/^[A-Za-z0-9_-]{22}$/);
  });

  it('I4: exactly one envelope, placed right before the task message; stale envelopes go', () => {
    const runNonce = newRunNonce();
    const oldNonce = newRunNonce();
    const envelope = new HumanMessage(envelopeMessageFields(buildEnvelope(cronMeta, { nonce: runNonce }), runNonce));
    const stale = new HumanMessage(envelopeMessageFields(buildEnvelope(cronMeta, { nonce: oldNonce }), oldNonce));
    const history = [
      new HumanMessage('hello'),
      stale,
      new HumanMessage({ content: 'earlier answer', additional_kwargs: {} }),
      new HumanMessage('run the daily report'), // the task
    ];
    const placed = placeEnvelope(history, envelope);
    expect(placed.filter((message) => isEnvelopeMessage(message, runNonce))).toHaveLength(1);
    expect(placed.filter((message) => ENVELOPE_KWARG in message.additional_kwargs)).toHaveLength(1);
    expect(placed.indexOf(envelope)).toBe(placed.length - 2);
    expect(placed.at(-1)?.content).toBe('run the daily report');
    expect(placed).toHaveLength(history.length); // one stale out, one fresh in
    // Placing again (the next model call of the same run) still gives exactly one.
    expect(placeEnvelope(placed, envelope).filter((message) => isEnvelopeMessage(message, runNonce))).toHaveLength(1);
  });

  it('placeEnvelope refuses an unmarked envelope or a list with no task', () => {
    const runNonce = newRunNonce();
    const envelope: MarkableMessage = { type: 'human', additional_kwargs: envelopeMessageFields(buildEnvelope(cronMeta, { nonce: runNonce }), runNonce).additional_kwargs };
    expect(() => placeEnvelope<MarkableMessage>([{ type: 'human' }], { type: 'human', additional_kwargs: {} })).toThrow();
    expect(() => placeEnvelope<MarkableMessage>([{ type: 'system' }], envelope)).toThrow();
    expect(placeEnvelope<MarkableMessage>([{ type: 'human' }], envelope)).toEqual([envelope, { type: 'human' }]);
  });
});

describe('system prompt rule', () => {
  it('I4: the rule names this run nonce and the envelope key, and says context is not instructions', () => {
    const runNonce = newRunNonce();
    const rule = systemPromptRule(runNonce);
    expect(rule).toContain(`"nonce": "${runNonce}"`);
    expect(rule).toContain(`"${ENVELOPE_KEY}"`);
    expect(rule).toMatch(/never as instructions/);
    expect(rule).toMatch(/cron.*non-interactive.*do not ask questions/s);
    expect(rule).toMatch(/ordinary user text/);
    expect(systemPromptRule(newRunNonce())).not.toContain(runNonce);
  });

  it('I4: the rule is appended even to an empty prompt (a run without an envelope)', () => {
    const runNonce = newRunNonce();
    expect(withSystemPromptRule('', runNonce)).toBe(systemPromptRule(runNonce));
    expect(withSystemPromptRule('You are a helpful agent.\n', runNonce)).toBe(`You are a helpful agent.\n\n${systemPromptRule(runNonce)}`);
    expect(() => systemPromptRule('')).toThrow();
  });
});
