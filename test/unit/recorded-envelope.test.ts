import { describe, expect, it } from 'vitest';
import { buildEnvelope } from '../../src/domain/envelope/build-envelope.js';
import { newRunNonce } from '../../src/domain/envelope/envelope-marker.js';
import { ENVELOPE_VISIBILITY, NONCE_PLACEHOLDER, recordedEnvelope } from '../../src/domain/envelope/envelope-visibility.js';

const core = { run_id: 'run-1', requested_at_utc: '2026-11-23T10:00:00.000Z', correlation_id: 'c-1' };

describe('the envelope a recorded run showed its model (I4)', () => {
  it('is none for the triggers whose model calls carry no envelope', () => {
    for (const trigger of ['user', 'autonomy'] as const) {
      expect(ENVELOPE_VISIBILITY[trigger]).toBe(false);
      expect(recordedEnvelope(trigger, { trigger, ...core })).toEqual({ shown: false, json: null, bytes: 0, stage: null });
    }
  });

  it('is the envelope built at call time, the nonce replaced by a same-length stand-in: same size, same cuts', () => {
    const nonce = newRunNonce();
    expect(NONCE_PLACEHOLDER).toHaveLength(nonce.length);
    const payload = Object.fromEntries(Array.from({ length: 32 }, (_, index) => [`field_${index}`, 'x'.repeat(300)]));
    const meta = { trigger: 'webhook', ...core, hook_id: 'h-1', delivery_id: 'd-1', payload };
    const real = buildEnvelope(meta, { nonce });
    expect(real.stage).not.toBe('full'); // the test needs a cut envelope
    const recorded = recordedEnvelope('webhook', meta);
    expect(recorded).toEqual({ shown: true, json: real.json.replace(nonce, NONCE_PLACEHOLDER), bytes: real.bytes, stage: real.stage });
    expect(recorded.bytes).toBeLessThanOrEqual(4096);
  });

  it('redacts as the envelope does, and is none for a run whose meta lost its trigger', () => {
    const recorded = recordedEnvelope('cron', { trigger: 'cron', ...core, schedule_id: 's-1', api_key: 'sk-live0123456789abcdefghijklmnop' });
    expect(recorded.json).toContain('[redacted]');
    expect(recorded.json).not.toContain('sk-live');
    expect(recordedEnvelope('cron', {})).toMatchObject({ shown: false });
  });
});
