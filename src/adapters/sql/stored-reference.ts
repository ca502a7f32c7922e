/**
 * What a checkpoint stores in place of a value kept elsewhere: an object of one key, the
 * kind of reference, whose value says where (`{ "vigil:value": hash }`,
 * `{ "vigil:message-log": ranges }`).
 */

/** The value under `key` when `value` is a reference of that kind, else undefined. */
export function referenceValue(value: unknown, key: string): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const keys = Object.keys(value);
  return keys.length === 1 && keys[0] === key ? (value as Record<string, unknown>)[key] : undefined;
}

/** The hash of a stored-value reference under `key`, or undefined for any other value. */
export function storedValueHash(value: unknown, key: string): string | undefined {
  const hash = referenceValue(value, key);
  return typeof hash === 'string' ? hash : undefined;
}
