/**
 * The 32-bit hash of a message id that thread_messages indexes its history rows by
 * (migration 25): the saver checks that history shows a message id once through it, with the
 * id itself compared on the rows it finds. An index entry of a few bytes instead of the id's
 * ~40 (a turn writes two). FNV-1a over the id's UTF-16 code units: fixed forever, since stored
 * rows are found by it; a signed 32-bit result, which both SQLite's INTEGER and PostgreSQL's
 * integer hold.
 */
export function messageIdHash(messageId: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < messageId.length; index++) {
    hash ^= messageId.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash | 0;
}
