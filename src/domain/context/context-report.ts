import type { BudgetSource } from './context-settings.js';
import type { SummaryCoverage } from './conversation-summary.js';
import type { MemoryQuerySource } from '../memory-query.js';

/** What one model call receives, part by part, with token counts (for logs and GET /api/threads/{id}/context). */
export interface ContextReport {
  budget: {
    maxTokens: number;
    source: BudgetSource;
    /** Kept free for the answer. */
    answerTokens: number;
    /** The most the input may take: maxTokens − answerTokens, divided by the usage correction. */
    inputLimit: number;
    /** Our count × this = the provider's (from reported usage; 1 until the model reported any). */
    usageCorrection: number;
  };
  system: { text: string; tokens: number };
  envelope: { shown: boolean; tokens: number };
  /** The tools bound to the call: their definitions (name, description, parameters schema) are input at the provider. */
  tools: { count: number; tokens: number };
  /**
   * The recalled memories the call carries (their data block, part of `system`), as fitted
   * to their share of the input; `query` null when the call recalls none (a planner's).
   */
  memories: { count: number; tokens: number; query: { source: MemoryQuerySource } | null };
  summary: { text: string; tokens: number; coverage: SummaryCoverage | null } | null;
  messages: {
    /** Messages in the thread (every one is still in history). */
    inThread: number;
    /** Covered by the summary. */
    summarized: number;
    /** Neither summarised nor in the window (a summary call failed or is still to come). */
    trimmed: number;
    /** Sent to the model, oldest first, with their counts. */
    window: Array<{ id: string | null; type: string; tokens: number; mediaReplaced: boolean; cut: boolean }>;
    tokens: number;
  };
  /** Everything the model receives, counted. */
  inputTokens: number;
}

/**
 * What one model call of a run received, kept with the run so the inspector can show it
 * for any past reply: the parts' token counts and which messages made the window (a
 * contiguous stretch of the thread, by first and last id, so the record stays a few
 * hundred bytes however long the window). The texts themselves are in the thread's
 * history as stored (redacted); the envelope is rebuilt from the run's redacted meta.
 */
export interface ModelInputRecord {
  at: string;
  model: string;
  inputTokens: number;
  inputLimit: number;
  systemTokens: number;
  envelopeTokens: number | null;
  /** The bound tools' definitions (absent in records written before they were counted). */
  tools?: { count: number; tokens: number };
  /** The recalled memories' data block, as fitted (absent in records written before it was reported). */
  memories?: { count: number; tokens: number };
  summary: { tokens: number; coveredMessages: number; lastMessageId: string } | null;
  window: { count: number; tokens: number; firstMessageId: string | null; lastMessageId: string | null; summarized: number; trimmed: number; cut: boolean; mediaReplaced: number };
}

export function modelInputRecordOf(report: ContextReport, at: string, model: string): ModelInputRecord {
  const { window } = report.messages;
  return {
    at,
    model,
    inputTokens: report.inputTokens,
    inputLimit: report.budget.inputLimit,
    systemTokens: report.system.tokens,
    envelopeTokens: report.envelope.shown ? report.envelope.tokens : null,
    tools: report.tools,
    memories: { count: report.memories.count, tokens: report.memories.tokens },
    summary: report.summary ? { tokens: report.summary.tokens, coveredMessages: report.summary.coverage?.messageCount ?? 0, lastMessageId: report.summary.coverage?.lastMessageId ?? '' } : null,
    window: {
      count: window.length,
      tokens: report.messages.tokens,
      // A placeholder that opens the window for a provider (no id: not in history) is not part of the stretch.
      firstMessageId: window.find((entry) => entry.id !== null)?.id ?? null,
      lastMessageId: window.at(-1)?.id ?? null,
      summarized: report.messages.summarized,
      trimmed: report.messages.trimmed,
      cut: window.some((entry) => entry.cut),
      mediaReplaced: window.filter((entry) => entry.mediaReplaced).length,
    },
  };
}
