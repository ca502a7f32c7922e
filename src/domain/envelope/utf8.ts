/**
 * Byte arithmetic for the envelope bound (4096 bytes of serialised JSON), without Buffer
 * or TextEncoder allocations. A string's `length` counts UTF-16 code units, which is
 * wrong for anything beyond ASCII, and JSON escaping makes some characters longer still.
 */

const ASCII_ONLY = /^[\x00-\x7f]*$/;

/** Bytes of `text` encoded as UTF-8. A lone surrogate counts 3 bytes (it encodes as U+FFFD). */
export function utf8ByteLength(text: string): number {
  if (ASCII_ONLY.test(text)) return text.length; // the common case, at regex-engine speed
  let bytes = 0;
  for (let index = 0; index < text.length; index++) {
    const unit = text.charCodeAt(index);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (isHighSurrogate(unit) && isLowSurrogate(text.charCodeAt(index + 1))) {
      bytes += 4;
      index++;
    } else bytes += 3;
  }
  return bytes;
}

/**
 * The longest prefix of `text` of at most `maxBytes` UTF-8 bytes that ends on a code
 * point boundary: a surrogate pair is kept whole or left out whole.
 */
export function utf8Prefix(text: string, maxBytes: number): string {
  return prefixBy(text, maxBytes, utf8Width);
}

/** Bytes `text` takes inside a JSON string literal (quotes excluded), as JSON.stringify writes it. */
export function jsonStringBytes(text: string): number {
  let bytes = 0;
  for (let index = 0; index < text.length; ) {
    const width = jsonWidth(text, index);
    bytes += width;
    index += unitsOf(width);
  }
  return bytes;
}

/** Like utf8Prefix, measured as jsonStringBytes. */
export function jsonStringPrefix(text: string, maxBytes: number): string {
  return prefixBy(text, maxBytes, jsonWidth);
}

/** `text` with every lone surrogate replaced by U+FFFD, so it encodes as valid UTF-8. */
export function toWellFormed(text: string): string {
  return text.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');
}

// Bytes of the code point at `index`. Only a surrogate pair takes 4 bytes, so the width
// also says how many UTF-16 units the code point spans (no tuple to allocate per character).
type Width = (text: string, index: number) => number;

function unitsOf(width: number): number {
  return width === 4 ? 2 : 1;
}

function prefixBy(text: string, maxBytes: number, width: Width): string {
  let bytes = 0;
  let index = 0;
  while (index < text.length) {
    const size = width(text, index);
    if (bytes + size > maxBytes) break;
    bytes += size;
    index += unitsOf(size);
  }
  return text.slice(0, index);
}

function utf8Width(text: string, index: number): number {
  const unit = text.charCodeAt(index);
  if (unit < 0x80) return 1;
  if (unit < 0x800) return 2;
  if (isHighSurrogate(unit) && isLowSurrogate(text.charCodeAt(index + 1))) return 4;
  return 3;
}

// JSON.stringify escapes '"', '\\' and control characters, and (since ES2019) writes a
// lone surrogate as a six-character \uXXXX escape.
function jsonWidth(text: string, index: number): number {
  const unit = text.charCodeAt(index);
  if (unit === 0x22 || unit === 0x5c) return 2;
  if (unit < 0x20) return unit === 0x08 || unit === 0x09 || unit === 0x0a || unit === 0x0c || unit === 0x0d ? 2 : 6;
  if (unit >= 0xd800 && unit <= 0xdfff && !(isHighSurrogate(unit) && isLowSurrogate(text.charCodeAt(index + 1)))) return 6;
  return utf8Width(text, index);
}

function isHighSurrogate(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdbff;
}

function isLowSurrogate(unit: number): boolean {
  return unit >= 0xdc00 && unit <= 0xdfff;
}
