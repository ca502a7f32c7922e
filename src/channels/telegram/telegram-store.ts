import type { Iso } from '../../app/ports.js';

/** One Telegram chat and the thread it maps to. */
export interface TelegramChat {
  botId: number;
  chatId: number;
  threadId: string;
  userId: string;
  chatType: string;
  /** Seq of the last thread message handed to the chat (sent, or passed over); -1 = none. */
  sentSeq: number;
  createdAt: Iso;
}

/** Storage of the Telegram channel (adapters/sql/telegram-chat-repository.ts). */
export interface TelegramChatStore {
  findChat(botId: number, chatId: number): Promise<TelegramChat | undefined>;
  /** False when the chat is mapped already (unique per bot and chat). */
  insertChat(chat: Omit<TelegramChat, 'createdAt'>, now: Iso): Promise<boolean>;
  deleteChat(botId: number, chatId: number): Promise<void>;
  listChats(botId: number): Promise<TelegramChat[]>;
  /**
   * Move the chat's sentSeq from `from` to `to`; false when it is no longer `from`
   * (another worker handed that message over first). Claiming before sending makes each
   * message go out at most once, whichever process sees it.
   */
  advanceSentSeq(botId: number, chatId: number, from: number, to: number, now: Iso): Promise<boolean>;
  /** False when this update id was handled before (a redelivery). */
  recordUpdate(botId: number, updateId: number, now: Iso): Promise<boolean>;
  forgetUpdate(botId: number, updateId: number): Promise<void>;
  /** Drop handled-update ids older than `before` (Telegram redelivers for 24 hours at most). */
  pruneUpdates(before: Iso): Promise<number>;
}
