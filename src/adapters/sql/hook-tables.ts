/**
 * Kysely types of the webhook tables (migration 0003), for `db.withTables<HookTables>()`.
 * Type aliases, not interfaces: withTables wants types with an implicit index signature.
 */
import type { Generated } from 'kysely';
import type { Timestamp } from './database.js';

export type HooksTable = {
  id: string;
  user_id: string;
  agent_id: string;
  thread_id: string | null;
  name: string;
  task_template: string;
  /** JSON array of payload paths, or null. */
  payload_fields: string | null;
  secret_ciphertext: string;
  created_at: Timestamp;
};

export type HookDeliveriesTable = {
  hook_id: string;
  delivery_id: string;
  run_id: string;
  received_at: Timestamp;
  /** 1 once the thread that held the delivery's task was deleted (migration 0019). */
  thread_deleted: Generated<number>;
};

export type HookTables = {
  hooks: HooksTable;
  hook_deliveries: HookDeliveriesTable;
};
