import { randomUUID } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import type { OutboundAttemptRecord, OutboundDeliveryRecord, OutboundWebhookRecord, OutboundWebhookRepository } from '../../app/outbound/outbound-ports.js';
import type { OutboundEventType } from '../../domain/outbound/address-policy.js';
import type { NullableTimestamp, SqlContext, Timestamp } from './database.js';
import { checkLimit, decodeJson, decodeJsonRecord, encodeJson, isoForDatabase, isoFromDatabase } from './values.js';

interface WebhooksTable {
  id: string;
  user_id: string;
  agent_id: string;
  url: string;
  events: string;
  secret_sealed: string;
  enabled: number;
  disabled_reason: string | null;
  consecutive_failures: number;
  created_at: Timestamp;
  updated_at: Timestamp;
}
interface DeliveriesTable {
  id: string;
  webhook_id: string;
  user_id: string;
  event_type: string;
  payload: string;
  status: string;
  attempts: number;
  last_error: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}
interface AttemptsTable {
  id: string;
  delivery_id: string;
  attempt: number;
  at: Timestamp;
  status_code: number | null;
  error: string | null;
}
export type OutboundTables = Tables;
type Tables = { outbound_webhooks: WebhooksTable; outbound_deliveries: DeliveriesTable; outbound_attempts: AttemptsTable };

export class SqlOutboundWebhookRepository implements OutboundWebhookRepository {
  readonly #db: Kysely<Tables>;

  constructor(context: SqlContext) {
    this.#db = context.db.withTables<Tables>() as unknown as Kysely<Tables>;
  }

  async create(webhook: Omit<OutboundWebhookRecord, 'updatedAt' | 'enabled' | 'disabledReason' | 'consecutiveFailures'>): Promise<OutboundWebhookRecord> {
    const row = await this.#db
      .insertInto('outbound_webhooks')
      .values({
        id: webhook.id,
        user_id: webhook.userId,
        agent_id: webhook.agentId,
        url: webhook.url,
        events: encodeJson(webhook.events),
        secret_sealed: webhook.secretSealed,
        enabled: 1,
        consecutive_failures: 0,
        created_at: isoForDatabase(webhook.createdAt),
        updated_at: isoForDatabase(webhook.createdAt),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return toWebhook(row);
  }

  async get(id: string): Promise<OutboundWebhookRecord | undefined> {
    const row = await this.#db.selectFrom('outbound_webhooks').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toWebhook(row);
  }

  async list(userId: string, agentId: string): Promise<OutboundWebhookRecord[]> {
    const rows = await this.#db.selectFrom('outbound_webhooks').selectAll().where('user_id', '=', userId).where('agent_id', '=', agentId).orderBy('created_at').execute();
    return rows.map(toWebhook);
  }

  async subscribers(userId: string, agentId: string, eventType: OutboundEventType): Promise<OutboundWebhookRecord[]> {
    return (await this.list(userId, agentId)).filter((webhook) => webhook.enabled && webhook.events.includes(eventType));
  }

  async delete(userId: string, id: string): Promise<boolean> {
    const result = await this.#db.deleteFrom('outbound_webhooks').where('id', '=', id).where('user_id', '=', userId).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  async noteAttempt(id: string, succeeded: boolean, disableAfter: number, now: string): Promise<OutboundWebhookRecord | undefined> {
    const current = await this.get(id);
    if (!current) return undefined;
    const failures = succeeded ? 0 : current.consecutiveFailures + 1;
    const disable = !succeeded && failures >= disableAfter && current.enabled;
    const row = await this.#db
      .updateTable('outbound_webhooks')
      .set({
        consecutive_failures: failures,
        updated_at: isoForDatabase(now),
        ...(disable ? { enabled: 0, disabled_reason: `disabled after ${failures} failed delivery attempts in a row` } : {}),
      })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst();
    return row && toWebhook(row);
  }

  async createDelivery(delivery: Omit<OutboundDeliveryRecord, 'status' | 'attempts' | 'lastError' | 'updatedAt'>): Promise<OutboundDeliveryRecord> {
    const row = await this.#db
      .insertInto('outbound_deliveries')
      .values({
        id: delivery.id,
        webhook_id: delivery.webhookId,
        user_id: delivery.userId,
        event_type: delivery.eventType,
        payload: encodeJson(delivery.payload),
        status: 'pending',
        attempts: 0,
        created_at: isoForDatabase(delivery.createdAt),
        updated_at: isoForDatabase(delivery.createdAt),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return toDelivery(row);
  }

  async getDelivery(id: string): Promise<OutboundDeliveryRecord | undefined> {
    const row = await this.#db.selectFrom('outbound_deliveries').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toDelivery(row);
  }

  async listDeliveries(webhookId: string, limit: number): Promise<Array<OutboundDeliveryRecord & { attemptLog: OutboundAttemptRecord[] }>> {
    const rows = await this.#db.selectFrom('outbound_deliveries').selectAll().where('webhook_id', '=', webhookId).orderBy('created_at', 'desc').orderBy('id').limit(checkLimit(limit)).execute();
    const ids = rows.map((row) => row.id);
    const attempts = ids.length === 0 ? [] : await this.#db.selectFrom('outbound_attempts').selectAll().where('delivery_id', 'in', ids).orderBy('attempt').execute();
    return rows.map((row) => ({
      ...toDelivery(row),
      attemptLog: attempts.filter((attempt) => attempt.delivery_id === row.id).map((attempt) => ({ attempt: Number(attempt.attempt), at: isoFromDatabase(attempt.at), statusCode: attempt.status_code === null ? null : Number(attempt.status_code), error: attempt.error })),
    }));
  }

  async recordAttempt(deliveryId: string, attempt: OutboundAttemptRecord, status: OutboundDeliveryRecord['status'], now: string): Promise<void> {
    await this.#db
      .insertInto('outbound_attempts')
      .values({ id: randomUUID(), delivery_id: deliveryId, attempt: attempt.attempt, at: isoForDatabase(attempt.at), status_code: attempt.statusCode, error: attempt.error })
      .onConflict((conflict) => conflict.columns(['delivery_id', 'attempt']).doNothing())
      .execute();
    await this.#db.updateTable('outbound_deliveries').set({ status, attempts: attempt.attempt, last_error: attempt.error, updated_at: isoForDatabase(now) }).where('id', '=', deliveryId).execute();
  }
}

function toWebhook(row: Selectable<WebhooksTable>): OutboundWebhookRecord {
  return {
    id: row.id,
    userId: row.user_id,
    agentId: row.agent_id,
    url: row.url,
    events: decodeJson(row.events) as OutboundEventType[],
    secretSealed: row.secret_sealed,
    enabled: Number(row.enabled) === 1,
    disabledReason: row.disabled_reason,
    consecutiveFailures: Number(row.consecutive_failures),
    createdAt: isoFromDatabase(row.created_at),
    updatedAt: isoFromDatabase(row.updated_at),
  };
}

function toDelivery(row: Selectable<DeliveriesTable>): OutboundDeliveryRecord {
  return {
    id: row.id,
    webhookId: row.webhook_id,
    userId: row.user_id,
    eventType: row.event_type as OutboundEventType,
    payload: decodeJsonRecord(row.payload),
    status: row.status as OutboundDeliveryRecord['status'],
    attempts: Number(row.attempts),
    lastError: row.last_error,
    createdAt: isoFromDatabase(row.created_at),
    updatedAt: isoFromDatabase(row.updated_at),
  };
}
