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
  /**
   * A window just large enough for the dictionary (zlib's smallest that holds it, 8 KiB at
   * least) and a mid-sized hash: each call sets up a stream and hashes the whole dictionary,
   * which at zlib's defaults cost more than packing a short message itself (a turn packs
   * three). Measured on a short message and a 4 KB reply: the same sizes, half the time.
   * Only the dictionary decides what the bytes mean; these settings change no stored row.
   */
  readonly #options: { windowBits: number; memLevel: number };

  /** Documents of the expected shapes; deflate finds the latest match first, so the commonest go last. */
  constructor(documents: readonly string[]) {
    this.#dictionary = Buffer.from(documents.join(''));
    this.#options = { windowBits: Math.min(15, Math.max(13, Math.ceil(Math.log2(this.#dictionary.byteLength + 1)))), memLevel: 4 };
  }

  /** The deflated bytes, or undefined when they would not be at least `overhead` + 1 bytes smaller. */
  pack(bytes: Uint8Array, overhead = 0): Buffer | undefined {
    const deflated = deflateRawSync(bytes, { dictionary: this.#dictionary, ...this.#options });
    return deflated.byteLength + overhead < bytes.byteLength ? deflated : undefined;
  }

  unpack(packed: Uint8Array): Buffer {
    return inflateRawSync(packed, { dictionary: this.#dictionary });
  }

  /**
   * The bytes to store: `marker` and the deflated bytes, or the bytes as they are when that
   * would not be smaller. The marker tells them apart on reading (unpackMarked), so it must
   * be a byte the unpacked documents never start with (JSON starts with `{`, `[` or `"`).
   */
  packMarked(bytes: Uint8Array, marker: number): Uint8Array {
    const deflated = this.pack(bytes, 1);
    if (deflated === undefined) return bytes;
    const stored = new Uint8Array(deflated.byteLength + 1);
    stored[0] = marker;
    stored.set(deflated, 1);
    return stored;
  }

  /** What packMarked stored, as it was given. */
  unpackMarked(stored: Uint8Array, marker: number): Uint8Array {
    return stored.byteLength > 0 && stored[0] === marker ? this.unpack(stored.subarray(1)) : stored;
  }
}
