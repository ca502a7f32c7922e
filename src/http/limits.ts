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
