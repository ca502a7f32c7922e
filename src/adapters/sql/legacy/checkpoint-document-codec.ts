/**
 * How vigil's SQLite saver stored a checkpoint document before the thread store (kept to
 * read them: legacy/sqlite-saver.ts): the serializer's JSON, deflated
 * against a preset dictionary of typical vigil checkpoints.
 *
 * Why: with messages in the message log and larger values stored once by hash, what is
 * left of a checkpoint is its skeleton (channel names, versions, versions seen), ~460 to
 * 1,100 bytes of which nearly everything is the same from one checkpoint to the next; a
 * turn stores two, about 40% of the bytes a chat turn added to the database (issue 10).
 * Plain deflate halves a document this small (it has seen no text to refer back to);
 * against a dictionary of such documents it shrinks to about a sixth (574 → 94 bytes on
 * average over the chat, tool, summary and planner checkpoints of the test suite), for
 * ~10 µs to pack and ~6 µs to unpack (preset-dictionary.ts). Reads of a thread's
 * latest checkpoint are answered from the checkpoint cache, so a turn unpacks nothing.
 *
 * A packed document starts with a version byte that JSON never starts with; any other
 * document (written before this, or by LangGraph's own saver) is read as it was. The
 * dictionary of a version must never change: a new dictionary takes a new version byte.
 * Metadata stays plain JSON: `list` filters on it inside SQLite.
 */
import { PresetDictionary } from '../preset-dictionary.js';

const PACKED_V1 = 0x01;

/**
 * Checkpoints of vigil's graphs as the test suite writes them (planner, chat with a tool
 * call and an interrupt, chat with a summary, a first and a later chat turn), ids and
 * hashes blanked. Deflate refers back at most 32 KiB and finds the latest match first:
 * the commonest shape comes last.
 */
const DICTIONARY_V1 = new PresetDictionary([
  '{"v":4,"id":"1f1e0000-0000-6000-8000-000000000000","ts":"2026-01-01T00:00:00.000Z","channel_values":{"messages":{"vigil:message-log":[1,3]},"planner":{"vigil:value":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},"summary":null,"summaryCoverage":null,"__pregel_tasks":[],"branch:to:complete":"strategic_critic"},"channel_versions":{"__start__":12,"messages":12,"branch:to:recall_memories":13,"planner":20,"branch:to:gather_knowledge":4,"branch:to:strategic_planner":5,"branch:to:tactical_planner":17,"branch:to:tactical_executor":18,"branch:to:tactical_critic":19,"branch:to:complete":20,"branch:to:strategic_critic":20},"versions_seen":{"__input__":{},"__start__":{"__start__":11},"recall_memories":{"branch:to:recall_memories":12},"gather_knowledge":{"branch:to:gather_knowledge":3},"strategic_planner":{"branch:to:strategic_planner":4},"tactical_planner":{"branch:to:tactical_planner":16},"tactical_executor":{"branch:to:tactical_executor":17},"tactical_critic":{"branch:to:tactical_critic":18},"complete":{"branch:to:complete":9},"strategic_critic":{"branch:to:strategic_critic":19}}}',
  '{"v":4,"id":"1f1e0000-0000-6000-8000-000000000000","ts":"2026-01-01T00:00:00.000Z","channel_values":{"messages":{"vigil:message-log":[1,8]},"summary":null,"summaryCoverage":null,"recalled":[],"memoryQuerySource":"last_real_user_message","__pregel_tasks":[],"branch:to:respond":"__start__"},"channel_versions":{"__start__":12,"messages":12,"branch:to:respond":12,"recalled":6,"memoryQuerySource":6,"branch:to:tools":7},"versions_seen":{"__input__":{},"__start__":{"__start__":11},"respond":{"branch:to:respond":10},"__interrupt__":{"messages":6,"recalled":6,"memoryQuerySource":6,"__start__":5,"branch:to:respond":6,"branch:to:tools":6},"tools":{"branch:to:tools":6}}}',
  '{"v":4,"id":"1f1e0000-0000-6000-8000-000000000000","ts":"2026-01-01T00:00:00.000Z","channel_values":{"messages":{"vigil:message-log":[1,9]},"summary":"[demo summary] 5 messages folded.","summaryCoverage":{"vigil:value":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},"recalled":[],"memoryQuerySource":"none","__pregel_tasks":[],"branch:to:respond":"__start__"},"channel_versions":{"__start__":14,"messages":14,"branch:to:respond":14,"recalled":12,"memoryQuerySource":12,"summary":12,"summaryCoverage":12},"versions_seen":{"__input__":{},"__start__":{"__start__":13},"respond":{"branch:to:respond":11}}}',
  '{"v":4,"id":"1f1e0000-0000-6000-8000-000000000000","ts":"2026-01-01T00:00:00.000Z","channel_values":{"messages":{"vigil:message-log":[1,1]},"summary":null,"summaryCoverage":null,"recalled":[],"memoryQuerySource":null,"__pregel_tasks":[],"branch:to:respond":"__start__"},"channel_versions":{"__start__":2,"messages":2,"branch:to:respond":2},"versions_seen":{"__input__":{},"__start__":{"__start__":1}}}',
  '{"v":4,"id":"1f1e0000-0000-6000-8000-000000000000","ts":"2026-01-01T00:00:00.000Z","channel_values":{"messages":{"vigil:message-log":[1,4]},"summary":null,"summaryCoverage":null,"recalled":[],"memoryQuerySource":"current_message","__pregel_tasks":[]},"channel_versions":{"__start__":5,"messages":6,"branch:to:respond":6,"recalled":6,"memoryQuerySource":6},"versions_seen":{"__input__":{},"__start__":{"__start__":4},"respond":{"branch:to:respond":5}}}',
]);

/** The bytes to store for a serialised checkpoint document. */
export function packCheckpointDocument(document: Uint8Array): Uint8Array {
  return DICTIONARY_V1.packMarked(document, PACKED_V1);
}

/** The serialised document a stored one holds, however it was stored. */
export function unpackCheckpointDocument<T extends Uint8Array | string>(stored: T): T | Uint8Array {
  return typeof stored === 'string' ? stored : DICTIONARY_V1.unpackMarked(stored, PACKED_V1);
}
