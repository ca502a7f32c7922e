import type { Iso } from '../../app/ports.js';
import type { RetentionKind, RetentionStore } from '../../app/retention.js';
import type { SqlContext } from './database.js';
import type { HookTables } from './hook-tables.js';
import type { TimerTables } from './timer-tables.js';

/**
 * Batched deletes of old records, on SQLite and PostgreSQL alike: each statement deletes
 * the ids a bounded subquery found (through the retention indexes), never a whole range.
 */
export class SqlRetentionRepository implements RetentionStore {
  readonly #db;

  constructor(context: SqlContext) {
    this.#db = context.db.withTables<HookTables & TimerTables>();
  }

  async pruneBatch(kind: RetentionKind, before: Iso, limit: number): Promise<number> {
    const db = this.#db;
    switch (kind) {
      case 'runs': {
        // Only finished runs: a run still going (or whose process died mid-run) is kept.
        const result = await db
          .deleteFrom('runs')
          .where('id', 'in', db.selectFrom('runs').select('id').where('ended_at', 'is not', null).where('ended_at', '<', before).limit(limit))
          .executeTakeFirst();
        return Number(result.numDeletedRows);
      }
      case 'timers': {
        // Only settled timers: a pending one is a promise still to keep, however old.
        const result = await db
          .deleteFrom('timers')
          .where('id', 'in', db.selectFrom('timers').select('id').where('state', '<>', 'pending').where('updated_at', '<', before).limit(limit))
          .executeTakeFirst();
        return Number(result.numDeletedRows);
      }
      case 'hook_deliveries': {
        // Past the signature's freshness window a delivery id can no longer be replayed, so
        // dropping its record cannot let a replay in.
        const result = await db
          .deleteFrom('hook_deliveries')
          .where((eb) =>
            eb(eb.refTuple('hook_id', 'delivery_id'), 'in', db.selectFrom('hook_deliveries').select(['hook_id', 'delivery_id']).where('received_at', '<', before).limit(limit).$asTuple('hook_id', 'delivery_id')),
          )
          .executeTakeFirst();
        return Number(result.numDeletedRows);
      }
    }
  }
}
