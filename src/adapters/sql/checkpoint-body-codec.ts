/**
 * How a row of `thread_checkpoints` holds a checkpoint: one document, `[checkpoint, metadata]`
 * as the serializer writes it (the checkpoint without its id, which is a column), deflated
 * against a preset dictionary of vigil's checkpoints.
 *
 * Why: with message lists stored as ranges of message numbers and large values stored once
 * by hash, what is left of a checkpoint is its skeleton (channel names, versions, versions
 * seen) and its metadata, a few hundred bytes nearly all of which are the same from one
 * checkpoint to the next. Plain deflate halves a document this small (it has seen no text to
 * refer back to); against a dictionary of such documents it shrinks to a fraction. A packed
 * body starts with a version byte JSON never starts with; a body that would not shrink is
 * stored as its JSON. A dictionary must never change once rows were packed with it: a new
 * dictionary takes a new version byte.
 */
import { PresetDictionary } from './preset-dictionary.js';

const PACKED_V1 = 0x01;

/**
 * Checkpoints of vigil's graphs (planner, chat with a tool call and an interrupt, chat with
 * a summary, a first and a later chat turn), ids and hashes blanked. Deflate refers back at
 * most 32 KiB and finds the latest match first: the commonest shape comes last.
 */
const DICTIONARY_V1 = new PresetDictionary([
  '[{"v":4,"ts":"2026-01-01T00:00:00.000Z","channel_values":{"messages":{"vigil:message-log":[1,3]},"planner":{"vigil:value":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},"summary":null,"summaryCoverage":null,"__pregel_tasks":[],"branch:to:complete":"strategic_critic"},"channel_versions":{"__start__":12,"messages":12,"branch:to:recall_memories":13,"planner":20,"branch:to:gather_knowledge":4,"branch:to:strategic_planner":5,"branch:to:tactical_planner":17,"branch:to:tactical_executor":18,"branch:to:tactical_critic":19,"branch:to:complete":20,"branch:to:strategic_critic":20},"versions_seen":{"__input__":{},"__start__":{"__start__":11},"recall_memories":{"branch:to:recall_memories":12},"gather_knowledge":{"branch:to:gather_knowledge":3},"strategic_planner":{"branch:to:strategic_planner":4},"tactical_planner":{"branch:to:tactical_planner":16},"tactical_executor":{"branch:to:tactical_executor":17},"tactical_critic":{"branch:to:tactical_critic":18},"complete":{"branch:to:complete":9},"strategic_critic":{"branch:to:strategic_critic":19}}},{"source":"loop","step":12,"parents":{}}]',
  '[{"v":4,"ts":"2026-01-01T00:00:00.000Z","channel_values":{"messages":{"vigil:message-log":[1,8]},"summary":null,"summaryCoverage":null,"recalled":[],"memoryQuerySource":"last_real_user_message","__pregel_tasks":[],"branch:to:respond":"__start__"},"channel_versions":{"__start__":12,"messages":12,"branch:to:respond":12,"recalled":6,"memoryQuerySource":6,"branch:to:tools":7},"versions_seen":{"__input__":{},"__start__":{"__start__":11},"respond":{"branch:to:respond":10},"__interrupt__":{"messages":6,"recalled":6,"memoryQuerySource":6,"__start__":5,"branch:to:respond":6,"branch:to:tools":6},"tools":{"branch:to:tools":6}}},{"source":"loop","step":7,"parents":{}}]',
  '[{"v":4,"ts":"2026-01-01T00:00:00.000Z","channel_values":{"messages":{"vigil:message-log":[1,9]},"summary":"[demo summary] 5 messages folded.","summaryCoverage":{"vigil:value":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},"recalled":[],"memoryQuerySource":"none","__pregel_tasks":[],"branch:to:respond":"__start__"},"channel_versions":{"__start__":14,"messages":14,"branch:to:respond":14,"recalled":12,"memoryQuerySource":12,"summary":12,"summaryCoverage":12},"versions_seen":{"__input__":{},"__start__":{"__start__":13},"respond":{"branch:to:respond":11}}},{"source":"loop","step":13,"parents":{}}]',
  '[{"v":4,"ts":"2026-01-01T00:00:00.000Z","channel_values":{"messages":{"vigil:message-log":[1,1]},"summary":null,"summaryCoverage":null,"recalled":[],"memoryQuerySource":null,"__pregel_tasks":[],"branch:to:respond":"__start__"},"channel_versions":{"__start__":2,"messages":2,"branch:to:respond":2},"versions_seen":{"__input__":{},"__start__":{"__start__":1}}},{"source":"input","step":-1,"parents":{}}]',
  '[{"v":4,"ts":"2026-01-01T00:00:00.000Z","channel_values":{"messages":{"vigil:message-log":[1,4]},"summary":null,"summaryCoverage":null,"recalled":[],"memoryQuerySource":"current_message","__pregel_tasks":[]},"channel_versions":{"__start__":5,"messages":6,"branch:to:respond":6,"recalled":6,"memoryQuerySource":6},"versions_seen":{"__input__":{},"__start__":{"__start__":4},"respond":{"branch:to:respond":5}}},{"source":"loop","step":1,"parents":{}}]',
]);

/** The bytes to store for a serialised `[checkpoint, metadata]` document. */
export function packCheckpointBody(document: Uint8Array): Uint8Array {
  return DICTIONARY_V1.packMarked(document, PACKED_V1);
}

/** The serialised document a stored body holds. */
export function unpackCheckpointBody(stored: Uint8Array): Uint8Array {
  return DICTIONARY_V1.unpackMarked(stored, PACKED_V1);
}
