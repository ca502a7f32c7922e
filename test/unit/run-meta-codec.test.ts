import { describe, expect, it } from 'vitest';
import { decodeRunMeta, encodeRunMeta } from '../../src/adapters/sql/run-meta-codec.js';

const columns = { trigger: 'user', id: 'run-1', requested_at: '2026-11-29T06:10:06.555Z', correlation_id: 'correlation-1' };
const core = { trigger: 'user', run_id: 'run-1', requested_at_utc: '2026-11-29T06:10:06.555Z', correlation_id: 'correlation-1' };

/** What a read answers for `meta` stored with `columns` (the columns as the database gives them back). */
function roundTrip(meta: Record<string, unknown>, stored = columns) {
  const encoded = encodeRunMeta(meta, stored);
  return { encoded, read: decodeRunMeta({ ...stored, ...encoded }) };
}

describe('run meta without its core keys (issue 10: bytes per turn; I3)', () => {
  it('leaves the core keys out when the columns give them back, and reads the same keys in the same order', () => {
    const meta = { ...core, schedule_id: 's', fire_id: 'f', payload: { b: 1, a: [2, { d: null, c: 'x' }] } };
    const { encoded, read } = roundTrip(meta);
    expect(encoded).toEqual({ meta: '{"schedule_id":"s","fire_id":"f","payload":{"b":1,"a":[2,{"d":null,"c":"x"}]}}', meta_core_omitted: 1 });
    expect(JSON.stringify(read)).toBe(JSON.stringify(meta));
  });

  it('keeps an own "__proto__" key a key', () => {
    const meta = JSON.parse(`{"trigger":"user","run_id":"run-1","requested_at_utc":"2026-11-29T06:10:06.555Z","correlation_id":"correlation-1","__proto__":{"polluted":true}}`) as Record<string, unknown>;
    const { encoded, read } = roundTrip(meta);
    expect(encoded.meta_core_omitted).toBe(1);
    expect(JSON.stringify(read)).toBe(JSON.stringify(meta));
    expect(Object.hasOwn(read, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('stores the meta whole when a column could not give its value back unchanged', () => {
    // A text column turns a lone surrogate into U+FFFD (PostgreSQL) and refuses a NUL; the meta's JSON keeps both.
    for (const correlation_id of ['half \ud800 a pair', 'nul \u0000 inside']) {
      const meta = { ...core, correlation_id };
      expect(roundTrip(meta, { ...columns, correlation_id }).encoded).toEqual({ meta: JSON.stringify(meta), meta_core_omitted: 0 });
    }
    // A timestamp in another form than the column reads back (no milliseconds, an offset, a six-digit year).
    for (const requested_at of ['2026-11-29T06:10:06Z', '2026-11-29T06:10:06.555+00:00', '+012026-11-29T06:10:06.555Z']) {
      const meta = { ...core, requested_at_utc: requested_at };
      expect(roundTrip(meta, { ...columns, requested_at }).encoded.meta_core_omitted).toBe(0);
    }
  });

  it('reads a whole meta as it is, whatever the columns say', () => {
    const meta = '{"trigger":"cron","run_id":"elsewhere","note":1}';
    expect(JSON.stringify(decodeRunMeta({ ...columns, meta, meta_core_omitted: 0 }))).toBe(meta);
  });
});
