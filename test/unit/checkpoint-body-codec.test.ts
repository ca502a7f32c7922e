/**
 * How a row of `thread_checkpoints` holds a checkpoint (src/adapters/sql/checkpoint-body-codec.ts):
 * the serializer's `[checkpoint, metadata]` document, deflated against a dictionary of vigil's
 * checkpoints behind a version byte JSON never starts with, or as it is when that would not
 * shrink it. Unpacking gives the document back byte for byte (I3).
 */
import { describe, expect, it } from 'vitest';
import { packCheckpointBody, unpackCheckpointBody } from '../../src/adapters/sql/checkpoint-body-codec.js';

const encoder = new TextEncoder();

/** A chat turn's checkpoint as the saver stores it (messages as row ranges, a long value by hash; ids and times of another run than the dictionary's), with its metadata. */
const CHAT_CHECKPOINT = encoder.encode(
  JSON.stringify([
    {
      v: 4,
      ts: '2026-11-24T23:08:29.193Z',
      channel_values: {
        messages: { 'vigil:message-log': [1, 16] },
        summary: null,
        summaryCoverage: null,
        recalled: [],
        memoryQuerySource: 'current_message',
        __pregel_tasks: [],
      },
      channel_versions: { __start__: 11, messages: 12, 'branch:to:respond': 12, recalled: 12, memoryQuerySource: 12 },
      versions_seen: { __input__: {}, __start__: { __start__: 10 }, respond: { 'branch:to:respond': 11 } },
    },
    { source: 'loop', step: 8, parents: {} },
  ]),
);

/** Other documents: another graph, unicode, a stored value's reference, ranges split by removals, values the serializer encodes, a large one. */
const OTHERS: [string, unknown][] = [
  ['a graph the dictionary does not know', [{ v: 4, ts: 'y', channel_values: { notes: { seen: 3, tags: ['a', 'ü✓'] } }, channel_versions: { notes: 'a.b' }, versions_seen: {} }, { source: 'update', step: 2, parents: {} }]],
  [
    'a summary by reference and a list split by a removal',
    [
      {
        v: 4,
        ts: '2026-01-01T00:00:00.000Z',
        channel_values: { messages: { 'vigil:message-log': [1, 3, 5, 9, 12, 12] }, summary: { 'vigil:value': 'q1w2e3r4t5y6u7i8o9p0q1w2e3r4t5y6u7i8o9p0abc' } },
        channel_versions: { messages: 14 },
        versions_seen: {},
      },
      { source: 'loop', step: 13, parents: { '': 'x' }, note: '🙂 \u2028' },
    ],
  ],
  ['values the serializer encodes', [{ v: 4, channel_values: { when: { lc: 2, type: 'constructor', id: ['Date'], args: ['1970-01-01T00:00:00.000Z'] }, nothing: { lc: 2, type: 'undefined' } } }, {}]],
  ['a large document', [{ v: 4, channel_values: { notes: Array.from({ length: 2_000 }, (_, index) => `note ${index}`) } }, { source: 'loop', step: 1, parents: {} }]],
  ['an empty checkpoint', [{ v: 4, id: '', ts: '', channel_values: {}, channel_versions: {}, versions_seen: {} }, {}]],
];

describe('checkpoint bodies (thread_checkpoints)', () => {
  it('packs a chat checkpoint to under a fifth of its size behind 0x01, and unpacks it byte for byte', () => {
    const packed = packCheckpointBody(CHAT_CHECKPOINT);
    expect(packed[0]).toBe(0x01);
    expect(packed.byteLength).toBeLessThan(CHAT_CHECKPOINT.byteLength / 5);
    expect(Buffer.from(unpackCheckpointBody(packed))).toEqual(Buffer.from(CHAT_CHECKPOINT));
  });

  for (const [what, document] of OTHERS) {
    it(`I3: ${what}: pack then unpack is the identity`, () => {
      const bytes = encoder.encode(JSON.stringify(document));
      const packed = packCheckpointBody(bytes);
      expect(packed[0] === 0x01 || packed === bytes).toBe(true);
      expect(Buffer.from(unpackCheckpointBody(packed))).toEqual(Buffer.from(bytes));
    });
  }

  it('reads a body stored unpacked (starting with "[" or "{") as it is', () => {
    expect(unpackCheckpointBody(CHAT_CHECKPOINT)).toBe(CHAT_CHECKPOINT);
    const object = encoder.encode('{"v":4}');
    expect(unpackCheckpointBody(object)).toBe(object);
    const empty = new Uint8Array(0);
    expect(unpackCheckpointBody(empty)).toBe(empty);
  });

  it('stores a body that packing would not shrink as it is', () => {
    for (const text of ['[]', '{}', '[{},{}]']) {
      const tiny = encoder.encode(text);
      expect(packCheckpointBody(tiny)).toBe(tiny);
      expect(unpackCheckpointBody(packCheckpointBody(tiny))).toBe(tiny);
    }
  });
});
