import { textOf } from './message-content.js';
import { isRealUserMessage, type ClassifiableMessage } from './message-metadata.js';

export type MemoryQuerySource = 'current_message' | 'last_real_user_message' | 'conversation_summary' | 'none';

export interface MemoryQuery {
  source: MemoryQuerySource;
  /** Empty when source is 'none': retrieval is skipped. */
  query: string;
}

/**
 * Which text to search long-term memory with (seed 000, phase 4), so that a synthetic
 * trigger prompt never becomes a search query (I2):
 * 1. the current message, when it is a real user message with text;
 * 2. else the last real user message with text, searching backwards;
 * 3. else the conversation summary;
 * 4. else nothing: the caller logs an ERROR and skips retrieval.
 * A multimodal message contributes its text blocks; one with no text (an image alone)
 * is passed over rather than searched as "[object Object]".
 */
export function chooseMemoryQuery(messages: readonly ClassifiableMessage[], summary: string | null | undefined): MemoryQuery {
  const last = messages.at(-1);
  if (last && isRealUserMessage(last)) {
    const text = textOf(last.content).trim();
    if (text) return { source: 'current_message', query: text };
  }
  for (let index = messages.length - 2; index >= 0; index--) {
    const message = messages[index]!;
    if (!isRealUserMessage(message)) continue;
    const text = textOf(message.content).trim();
    if (text) return { source: 'last_real_user_message', query: text };
  }
  const summaryText = summary?.trim();
  if (summaryText) return { source: 'conversation_summary', query: summaryText };
  return { source: 'none', query: '' };
}

/**
 * How loudly to log a skipped retrieval (rule 4), the same for every graph and trigger. A
 * person's turn or an idle follow-up always has a person's words somewhere before it, so
 * none is a misconfiguration (seed 000: ERROR). A cron, webhook, channel or heartbeat run
 * may rightly open or work a thread nobody wrote in: its synthetic task text is never a
 * query (I2), so it just skips, at info.
 */
export function skippedQueryLevel(trigger: string): 'error' | 'info' {
  return trigger === 'autonomy' || trigger === 'user' ? 'error' : 'info';
}

/** The log line of a skipped retrieval (kept stable: operators search for it). */
export const NO_QUERY_SOURCE_MESSAGE = 'Empty thread - no query source available for memory retrieval';
