/**
 * Limits of the public API that a client checks before it sends, in a module of its own
 * with no imports: the web app bundles these numbers from here (web/src/chat.tsx), so
 * the check it makes and the one the server makes cannot drift apart.
 */

/**
 * The longest message a person may send, in characters (as JavaScript counts them: UTF-16
 * code units), after trimming: a string content, or each text block of one
 * (`messageContentSchema` in schemas.ts). A longer one is 400 VALIDATION_FAILED.
 */
export const MESSAGE_MAX_CHARACTERS = 100_000;

/**
 * The most bytes a text of MESSAGE_MAX_CHARACTERS can take written as JSON: 6 bytes a
 * character, each UTF-16 code unit written as a `\uXXXX` escape (as some encoders write
 * every non-ASCII character; raw UTF-8 takes at most 3 bytes a code unit). The WebSocket's
 * frame limit is at least this, so no message is refused for the characters it is written in.
 */
export const MESSAGE_MAX_JSON_BYTES = 6 * MESSAGE_MAX_CHARACTERS;
