import { describe, expect, it } from 'vitest';
import { packCheckpointDocument, unpackCheckpointDocument } from '../../src/adapters/sql/checkpoint-document-codec.js';

const encoder = new TextEncoder();

/** A chat turn's checkpoint as vigil's SQLite saver serialises it (messages in the log, ids of another run than the dictionary's). */
const CHAT_CHECKPOINT = encoder.encode(
  JSON.stringify({
    v: 4,
    id: '1f1e85bf-5fe0-6790-800a-7a973c7ef20c',
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
  }),
);

describe('checkpoint documents packed against a dictionary (issue 10: bytes per turn)', () => {
  it('packs a chat checkpoint to under a fifth of its size and unpacks it byte for byte', () => {
    const packed = packCheckpointDocument(CHAT_CHECKPOINT);
    expect(packed[0]).toBe(0x01);
    expect(packed.byteLength).toBeLessThan(CHAT_CHECKPOINT.byteLength / 5);
    expect(Buffer.from(unpackCheckpointDocument(packed))).toEqual(Buffer.from(CHAT_CHECKPOINT));
  });

  it('packs a checkpoint of a graph the dictionary does not know, and unpacks it exactly', () => {
    const other = encoder.encode(JSON.stringify({ v: 4, id: 'x', ts: 'y', channel_values: { notes: { seen: 3, tags: ['a', 'ü✓'] } }, channel_versions: { notes: 'a.b' }, versions_seen: {} }));
    expect(Buffer.from(unpackCheckpointDocument(packCheckpointDocument(other)))).toEqual(Buffer.from(other));
  });

  it('reads a document stored unpacked (before packing, or by LangGraph’s own saver) as it is', () => {
    expect(unpackCheckpointDocument(CHAT_CHECKPOINT)).toBe(CHAT_CHECKPOINT);
    expect(unpackCheckpointDocument('{"v":4}')).toBe('{"v":4}');
  });

  it('stores a document that packing would not shrink as it is', () => {
    const tiny = encoder.encode('{}');
    expect(packCheckpointDocument(tiny)).toBe(tiny);
  });
});
