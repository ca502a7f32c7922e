/**
 * Version 9: outbound webhooks per agent (run.completed of autonomous runs,
 * approval.requested, approval.expired): subscriptions, one delivery per event and
 * subscription, and every attempt of it, so that "was it delivered, and why not?" has an answer.
 */
import type { Migration } from './migration.js';

const webhooks = (timestamp: string) => `CREATE TABLE outbound_webhooks (
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  url TEXT NOT NULL,
  events TEXT NOT NULL,
  secret_sealed TEXT NOT NULL,
  enabled INTEGER NOT NULL,
  disabled_reason TEXT,
  consecutive_failures INTEGER NOT NULL DEFAULT 0,
  created_at ${timestamp} NOT NULL,
  updated_at ${timestamp} NOT NULL
)`;

const deliveries = (timestamp: string) => `CREATE TABLE outbound_deliveries (
  id TEXT PRIMARY KEY,
  webhook_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  event_type TEXT NOT NULL,
  payload TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts INTEGER NOT NULL DEFAULT 0,
  last_error TEXT,
  created_at ${timestamp} NOT NULL,
  updated_at ${timestamp} NOT NULL
)`;

const attempts = (timestamp: string) => `CREATE TABLE outbound_attempts (
  id TEXT PRIMARY KEY,
  delivery_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  at ${timestamp} NOT NULL,
  status_code INTEGER,
  error TEXT,
  UNIQUE (delivery_id, attempt)
)`;

const indexes = [
  `CREATE INDEX outbound_webhooks_agent ON outbound_webhooks (user_id, agent_id)`,
  `CREATE INDEX outbound_deliveries_webhook ON outbound_deliveries (webhook_id, created_at)`,
];

export const outboundWebhooksMigration: Migration = {
  version: 9,
  name: 'outbound-webhooks',
  statements: {
    sqlite: [webhooks('TEXT'), deliveries('TEXT'), attempts('TEXT'), ...indexes],
    postgres: [webhooks('timestamptz'), deliveries('timestamptz'), attempts('timestamptz'), ...indexes],
  },
};
