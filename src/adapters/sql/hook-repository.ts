import type { Kysely, Selectable } from 'kysely';
import type { HookDelivery, HookRecord, HookStore, HookWithSecret, NewHook, NewHookDelivery } from '../../app/webhooks/hook-store.js';
import type { Iso } from '../../app/ports.js';
import type { Database, SqlContext } from './database.js';
import type { HookDeliveriesTable, HookTables, HooksTable } from './hook-tables.js';
import { checkLimit, decodeJson, encodeJson, isoForDatabase, isoFromDatabase } from './values.js';

type Db = Kysely<Database & HookTables>;

/** Hooks and their deliveries, on SQLite and PostgreSQL. */
export class SqlHookRepository implements HookStore {
  readonly #db: Db;

  constructor(context: SqlContext) {
    this.#db = context.db.withTables<HookTables>();
  }

  async create(hook: NewHook, now: Iso): Promise<HookRecord> {
    const row = await this.#db
      .insertInto('hooks')
      .values({
        id: hook.id,
        user_id: hook.userId,
        agent_id: hook.agentId,
        thread_id: hook.threadId,
        name: hook.name,
        task_template: hook.taskTemplate,
        payload_fields: hook.payloadFields === null ? null : encodeJson(hook.payloadFields),
        secret_ciphertext: hook.secretCiphertext,
        created_at: isoForDatabase(now),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return toHookRecord(row);
  }

  async get(userId: string, hookId: string): Promise<HookRecord | undefined> {
    const row = await this.#db.selectFrom('hooks').selectAll().where('id', '=', hookId).where('user_id', '=', userId).executeTakeFirst();
    return row === undefined ? undefined : toHookRecord(row);
  }

  async list(userId: string, options: { limit: number }): Promise<HookRecord[]> {
    const rows = await this.#db
      .selectFrom('hooks')
      .selectAll()
      .where('user_id', '=', userId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(checkLimit(options.limit))
      .execute();
    return rows.map(toHookRecord);
  }

  async delete(userId: string, hookId: string): Promise<boolean> {
    // Deliveries go by ON DELETE CASCADE (SQLite runs with foreign_keys = ON).
    const result = await this.#db.deleteFrom('hooks').where('id', '=', hookId).where('user_id', '=', userId).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  async getForDelivery(hookId: string): Promise<HookWithSecret | undefined> {
    const row = await this.#db.selectFrom('hooks').selectAll().where('id', '=', hookId).executeTakeFirst();
    return row === undefined ? undefined : { ...toHookRecord(row), secretCiphertext: row.secret_ciphertext };
  }

  /** ON CONFLICT DO NOTHING: the primary key decides, atomically, who recorded it first. */
  async recordDelivery(delivery: NewHookDelivery): Promise<boolean> {
    const row = await this.#db
      .insertInto('hook_deliveries')
      .values({ hook_id: delivery.hookId, delivery_id: delivery.deliveryId, run_id: delivery.runId, received_at: isoForDatabase(delivery.receivedAt) })
      .onConflict((conflict) => conflict.columns(['hook_id', 'delivery_id']).doNothing())
      .returning('delivery_id')
      .executeTakeFirst();
    return row !== undefined;
  }

  async takeOverDelivery(hookId: string, deliveryId: string, fromRunId: string, to: { runId: string; receivedAt: string }): Promise<boolean> {
    const result = await this.#db
      .updateTable('hook_deliveries')
      .set({ run_id: to.runId, received_at: isoForDatabase(to.receivedAt) })
      .where('hook_id', '=', hookId)
      .where('delivery_id', '=', deliveryId)
      .where('run_id', '=', fromRunId)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async forgetDelivery(hookId: string, deliveryId: string, runId: string): Promise<void> {
    await this.#db.deleteFrom('hook_deliveries').where('hook_id', '=', hookId).where('delivery_id', '=', deliveryId).where('run_id', '=', runId).execute();
  }

  async getDelivery(hookId: string, deliveryId: string): Promise<HookDelivery | undefined> {
    const row = await this.#db.selectFrom('hook_deliveries').selectAll().where('hook_id', '=', hookId).where('delivery_id', '=', deliveryId).executeTakeFirst();
    return row === undefined ? undefined : toHookDelivery(row);
  }

  async listDeliveries(hookId: string, options: { limit: number }): Promise<HookDelivery[]> {
    const rows = await this.#db
      .selectFrom('hook_deliveries')
      .selectAll()
      .where('hook_id', '=', hookId)
      .orderBy('received_at', 'desc')
      .orderBy('delivery_id', 'desc')
      .limit(checkLimit(options.limit))
      .execute();
    return rows.map(toHookDelivery);
  }
}

function toHookRecord(row: Selectable<HooksTable>): HookRecord {
  const fields = row.payload_fields === null ? null : decodeJson(row.payload_fields);
  return {
    id: row.id,
    userId: row.user_id,
    agentId: row.agent_id,
    threadId: row.thread_id,
    name: row.name,
    taskTemplate: row.task_template,
    payloadFields: Array.isArray(fields) ? fields.filter((field): field is string => typeof field === 'string') : null,
    createdAt: isoFromDatabase(row.created_at),
  };
}

function toHookDelivery(row: Selectable<HookDeliveriesTable>): HookDelivery {
  return { hookId: row.hook_id, deliveryId: row.delivery_id, runId: row.run_id, receivedAt: isoFromDatabase(row.received_at), threadDeleted: Number(row.thread_deleted) !== 0 };
}
