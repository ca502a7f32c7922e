/**
 * Deflate against a preset dictionary (node:zlib, nothing added), for the small JSON
 * documents the savers store by the thousand: checkpoint skeletons, logged messages.
 *
 * Why a dictionary: plain deflate halves a document of a few hundred bytes at best, having
 * seen no text before it to refer back to; primed with documents of the same shape, it
 * refers back into them for the keys and structure, and mostly only the values are left.
 * A dictionary must never change once rows were packed with it: a new one is a new
 * version, told apart by whoever stores the bytes (a version byte, a row type).
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib';

export class PresetDictionary {
  readonly #dictionary: Buffer;

  /** Documents of the expected shapes; deflate finds the latest match first, so the commonest go last. */
  constructor(documents: readonly string[]) {
    this.#dictionary = Buffer.from(documents.join(''));
  }

  /** The deflated bytes, or undefined when they would not be at least `overhead` + 1 bytes smaller. */
  pack(bytes: Uint8Array, overhead = 0): Buffer | undefined {
    const deflated = deflateRawSync(bytes, { dictionary: this.#dictionary });
    return deflated.byteLength + overhead < bytes.byteLength ? deflated : undefined;
  }

  unpack(packed: Uint8Array): Buffer {
    return inflateRawSync(packed, { dictionary: this.#dictionary });
  }
}
