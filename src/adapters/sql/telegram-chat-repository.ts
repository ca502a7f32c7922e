import type { Kysely, Selectable } from 'kysely';
import type { Iso } from '../../app/ports.js';
import type { TelegramChat, TelegramChatStore } from '../../channels/telegram/telegram-store.js';
import type { Database, SqlContext } from './database.js';
import type { TelegramChatsTable, TelegramTables } from './telegram-tables.js';
import { isoForDatabase, isoFromDatabase } from './values.js';

type Db = Kysely<Database & TelegramTables>;

/** Telegram chats ↔ threads, and handled update ids, on SQLite and PostgreSQL. */
export class SqlTelegramChatRepository implements TelegramChatStore {
  readonly #db: Db;

  constructor(context: SqlContext) {
    this.#db = context.db.withTables<TelegramTables>();
  }

  async findChat(botId: number, chatId: number): Promise<TelegramChat | undefined> {
    const row = await this.#db.selectFrom('telegram_chats').selectAll().where('bot_id', '=', botId).where('chat_id', '=', chatId).executeTakeFirst();
    return row === undefined ? undefined : toChat(row);
  }

  async insertChat(chat: Omit<TelegramChat, 'createdAt'>, now: Iso): Promise<boolean> {
    const at = isoForDatabase(now);
    const row = await this.#db
      .insertInto('telegram_chats')
      .values({ bot_id: chat.botId, chat_id: chat.chatId, thread_id: chat.threadId, user_id: chat.userId, chat_type: chat.chatType, sent_seq: chat.sentSeq, created_at: at, updated_at: at })
      .onConflict((conflict) => conflict.columns(['bot_id', 'chat_id']).doNothing())
      .returning('thread_id')
      .executeTakeFirst();
    return row !== undefined;
  }

  async deleteChat(botId: number, chatId: number): Promise<void> {
    await this.#db.deleteFrom('telegram_chats').where('bot_id', '=', botId).where('chat_id', '=', chatId).execute();
  }

  async listChats(botId: number): Promise<TelegramChat[]> {
    const rows = await this.#db.selectFrom('telegram_chats').selectAll().where('bot_id', '=', botId).orderBy('created_at', 'asc').execute();
    return rows.map(toChat);
  }

  async advanceSentSeq(botId: number, chatId: number, from: number, to: number, now: Iso): Promise<boolean> {
    const result = await this.#db
      .updateTable('telegram_chats')
      .set({ sent_seq: to, updated_at: isoForDatabase(now) })
      .where('bot_id', '=', botId)
      .where('chat_id', '=', chatId)
      .where('sent_seq', '=', from)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  async recordUpdate(botId: number, updateId: number, now: Iso): Promise<boolean> {
    const row = await this.#db
      .insertInto('telegram_updates')
      .values({ bot_id: botId, update_id: updateId, received_at: isoForDatabase(now) })
      .onConflict((conflict) => conflict.columns(['bot_id', 'update_id']).doNothing())
      .returning('update_id')
      .executeTakeFirst();
    return row !== undefined;
  }

  async forgetUpdate(botId: number, updateId: number): Promise<void> {
    await this.#db.deleteFrom('telegram_updates').where('bot_id', '=', botId).where('update_id', '=', updateId).execute();
  }

  async pruneUpdates(before: Iso): Promise<number> {
    const result = await this.#db.deleteFrom('telegram_updates').where('received_at', '<', isoForDatabase(before)).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}

function toChat(row: Selectable<TelegramChatsTable>): TelegramChat {
  return {
    botId: toId(row.bot_id),
    chatId: toId(row.chat_id),
    threadId: row.thread_id,
    userId: row.user_id,
    chatType: row.chat_type,
    sentSeq: Number(row.sent_seq),
    createdAt: isoFromDatabase(row.created_at),
  };
}

function toId(value: number | string): number {
  const id = typeof value === 'number' ? value : Number(value);
  if (!Number.isSafeInteger(id)) throw new Error(`a Telegram id out of range: ${String(value)}`);
  return id;
}
