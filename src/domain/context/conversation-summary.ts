import { z } from 'zod';

/**
 * The running conversation summary that stands in for older messages in model calls
 * (I14). It is written by the system (a model asked to summarise), never by a person:
 * it lives in thread state beside the messages, is never a message itself, is never
 * returned as history, never searched as a person's words while a real message exists,
 * and never counts as activity (I2). Its coverage says exactly which messages it stands
 * for, so nothing is hidden: every message stays in history.
 */
export const summaryCoverageSchema = z.object({
  /** The first and last message the summary covers (every message up to the last one). */
  firstMessageId: z.string(),
  lastMessageId: z.string(),
  /** How many messages it covers. */
  messageCount: z.number().int().min(1),
  /** How many summary calls wrote it (each read the previous summary and the newly folded messages). */
  folds: z.number().int().min(1),
  /** When it was last written, and by which model (spec). */
  updatedAt: z.string(),
  model: z.string(),
  /** Its size in tokens when written. */
  tokens: z.number().int().min(0),
});
export type SummaryCoverage = z.infer<typeof summaryCoverageSchema>;

/**
 * Marks a summary request, so the offline demo model can answer it deterministically.
 * Real models read it as a plain instruction heading.
 */
export const SUMMARY_REQUEST_MARKER = '[vigil:conversation-summary]';

/** The heading under which the summary reaches the model, in the system prompt (never as a person's message). */
export const SUMMARY_SECTION_HEADING = 'Summary of the earlier conversation (written by the system from older messages; not the words of the person):';

export function summaryInstruction(maxTokens: number): string {
  const words = Math.max(50, Math.floor(maxTokens * 0.7));
  return [
    `${SUMMARY_REQUEST_MARKER} You keep the running summary of a long conversation between a person and an assistant.`,
    'You are given the summary so far (it may be empty) and the messages that come after it.',
    'Write the new summary: the previous summary and the new messages merged, facts, decisions, open questions and commitments first.',
    'Lines marked "system" were written by the system, not by the person: never present them as the person\'s words.',
    `At most ${words} words. Answer with the summary only.`,
  ].join('\n');
}

export type TranscriptRole = 'person' | 'assistant' | 'system' | 'tool';

export interface TranscriptLine {
  role: TranscriptRole;
  text: string;
}

/** The user turn of a summary call: the previous summary and the newly folded messages, as quoted data. */
export function summaryRequestText(previous: string | null, lines: readonly TranscriptLine[]): string {
  const transcript = lines.map((line) => `${line.role}: ${line.text.replace(/\s+/g, ' ').trim()}`).join('\n');
  return `<summary_so_far>\n${previous?.trim() ?? ''}\n</summary_so_far>\n<new_messages>\n${transcript}\n</new_messages>`;
}

/** The system prompt of a model call with the summary in its own section. */
export function withSummarySection(systemPrompt: string, summary: string | null | undefined): string {
  const text = summary?.trim();
  // Delimited like any other data the model is shown: it was derived from people's words.
  return text ? `${systemPrompt}\n\n${SUMMARY_SECTION_HEADING}\n<conversation_summary>\n${text}\n</conversation_summary>` : systemPrompt;
}
