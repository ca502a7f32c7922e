import type { BudgetSource } from './context-settings.js';
import type { SummaryCoverage } from './conversation-summary.js';

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
