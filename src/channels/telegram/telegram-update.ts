import { z } from 'zod';
import { TELEGRAM_CHAT_TYPES } from '../../domain/envelope/run-meta.js';

/**
 * The part of a Telegram update vigil reads. Loose objects on purpose, unlike vigil's own
 * API: the Bot API adds fields over time, and an update must not be refused because
 * Telegram grew a field. Only the fields below are ever read, each validated.
 */
export const telegramMessageSchema = z
  .object({
    message_id: z.number().int().positive(),
    chat: z.object({ id: z.number().int(), type: z.enum(TELEGRAM_CHAT_TYPES) }).loose(),
    from: z.object({ id: z.number().int().positive(), is_bot: z.boolean().optional() }).loose().optional(),
    text: z.string().max(16_384).optional(),
  })
  .loose();

/** A press of an inline button (an approval's Approve / Reject). */
export const telegramCallbackQuerySchema = z
  .object({
    id: z.string().min(1).max(128),
    from: z.object({ id: z.number().int().positive() }).loose(),
    message: z.object({ message_id: z.number().int().positive(), chat: z.object({ id: z.number().int(), type: z.enum(TELEGRAM_CHAT_TYPES) }).loose(), text: z.string().max(16_384).optional() }).loose().optional(),
    data: z.string().max(64).optional(),
  })
  .loose();

export const telegramUpdateSchema = z
  .object({
    update_id: z.number().int().nonnegative(),
    message: telegramMessageSchema.optional(),
    callback_query: telegramCallbackQuerySchema.optional(),
  })
  .loose();

export type TelegramCallbackQuery = z.infer<typeof telegramCallbackQuerySchema>;

/** An approval button's payload: `ap:<approval id>:a|r` (Telegram allows 64 bytes). */
export function approvalButtonData(approvalId: string, decision: 'approve' | 'reject'): string {
  return `ap:${approvalId}:${decision === 'approve' ? 'a' : 'r'}`;
}

export function parseApprovalButton(data: string | undefined): { approvalId: string; decision: 'approve' | 'reject' } | undefined {
  const match = /^ap:([A-Za-z0-9-]{1,64}):([ar])$/.exec(data ?? '');
  return match ? { approvalId: match[1]!, decision: match[2] === 'a' ? 'approve' : 'reject' } : undefined;
}

export type TelegramUpdate = z.infer<typeof telegramUpdateSchema>;
export type TelegramMessage = z.infer<typeof telegramMessageSchema>;

/** Telegram's limit on one text message. */
export const TELEGRAM_TEXT_MAX_CHARS = 4096;

/** Split a reply into Telegram-sized parts, at a line or word break when one is near. */
export function splitForTelegram(text: string, max = TELEGRAM_TEXT_MAX_CHARS): string[] {
  const parts: string[] = [];
  let rest = text;
  while (rest.length > max) {
    let at = rest.lastIndexOf('\n', max);
    if (at < max / 2) at = rest.lastIndexOf(' ', max);
    if (at < max / 2) at = max;
    const code = rest.charCodeAt(at - 1);
    if (code >= 0xd800 && code <= 0xdbff) at -= 1; // never split a surrogate pair
    parts.push(rest.slice(0, at));
    rest = rest.slice(at).replace(/^[\n ]/, '');
  }
  if (rest.length > 0) parts.push(rest);
  return parts;
}
