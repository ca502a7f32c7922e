/**
 * Version 3: signed webhooks and the Telegram channel.
 *
 * - hooks: one row per webhook; the HMAC secret is stored encrypted (AES-256-GCM, see
 *   app/webhooks/hook-secret-box.ts), never in plain text.
 * - hook_deliveries: one row per accepted delivery; the primary key (hook_id,
 *   delivery_id) is what refuses a replay, atomically, on both backends.
 * - telegram_chats: each Telegram chat maps to one thread (unique per bot and chat), with
 *   the position of the last thread message handed to the chat (`sent_seq`), so that
 *   every visible reply goes out once, in order, including follow-ups.
 * - telegram_updates: update ids already handled, so a redelivered update (a webhook
 *   retry, polling after a crash) starts nothing twice.
 *
 * Telegram ids are 64-bit integers (group ids are negative); pg hands bigint back as text
 * and the repository converts it.
 */
import type { Migration } from './migration.js';

const hooks = (timestamp: string) => `CREATE TABLE hooks (
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  thread_id TEXT,
  name TEXT NOT NULL,
  task_template TEXT NOT NULL,
  payload_fields TEXT,
  secret_ciphertext TEXT NOT NULL,
  created_at ${timestamp} NOT NULL
)`;

const hookDeliveries = (timestamp: string) => `CREATE TABLE hook_deliveries (
  hook_id TEXT NOT NULL REFERENCES hooks (id) ON DELETE CASCADE,
  delivery_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  received_at ${timestamp} NOT NULL,
  PRIMARY KEY (hook_id, delivery_id)
)`;

const telegramChats = (integer: string, timestamp: string) => `CREATE TABLE telegram_chats (
  bot_id ${integer} NOT NULL,
  chat_id ${integer} NOT NULL,
  thread_id TEXT NOT NULL UNIQUE,
  user_id TEXT NOT NULL,
  chat_type TEXT NOT NULL,
  sent_seq INTEGER NOT NULL,
  created_at ${timestamp} NOT NULL,
  updated_at ${timestamp} NOT NULL,
  PRIMARY KEY (bot_id, chat_id)
)`;

const telegramUpdates = (integer: string, timestamp: string) => `CREATE TABLE telegram_updates (
  bot_id ${integer} NOT NULL,
  update_id ${integer} NOT NULL,
  received_at ${timestamp} NOT NULL,
  PRIMARY KEY (bot_id, update_id)
)`;

export const hooksChannelsMigration: Migration = {
  version: 3,
  name: 'hooks_deliveries_telegram_chats',
  statements: {
    sqlite: [
      hooks('TEXT'),
      `CREATE INDEX hooks_user ON hooks (user_id, created_at)`,
      hookDeliveries('TEXT'),
      telegramChats('INTEGER', 'TEXT'),
      telegramUpdates('INTEGER', 'TEXT'),
      `CREATE INDEX telegram_updates_received ON telegram_updates (received_at)`,
    ],
    postgres: [
      hooks('timestamptz'),
      `CREATE INDEX hooks_user ON hooks (user_id, created_at)`,
      hookDeliveries('timestamptz'),
      telegramChats('bigint', 'timestamptz'),
      telegramUpdates('bigint', 'timestamptz'),
      `CREATE INDEX telegram_updates_received ON telegram_updates (received_at)`,
    ],
  },
};
