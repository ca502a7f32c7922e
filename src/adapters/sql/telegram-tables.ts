/**
 * Kysely types of the Telegram tables (migration 0003), for `db.withTables<TelegramTables>()`.
 * Telegram ids are bigint on PostgreSQL, which pg reads back as text: the repository
 * converts them (they fit in 52 bits, so a JavaScript number holds them exactly).
 */
import type { ColumnType } from 'kysely';
import type { Timestamp } from './database.js';

type TelegramId = ColumnType<number | string, number, number>;

export type TelegramChatsTable = {
  bot_id: TelegramId;
  chat_id: TelegramId;
  thread_id: string;
  user_id: string;
  chat_type: string;
  sent_seq: number;
  created_at: Timestamp;
  updated_at: Timestamp;
};

export type TelegramUpdatesTable = {
  bot_id: TelegramId;
  update_id: TelegramId;
  received_at: Timestamp;
};

export type TelegramTables = {
  telegram_chats: TelegramChatsTable;
  telegram_updates: TelegramUpdatesTable;
};
