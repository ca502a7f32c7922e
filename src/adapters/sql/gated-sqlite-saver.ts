/**
 * LangGraph's SqliteSaver on the same better-sqlite3 connection as Kysely, with its
 * writes held back while one of our transactions is open.
 *
 * Why: one connection means one transaction scope. Our transactions await between
 * statements, and a checkpoint write landing in such a gap would silently join our
 * transaction and vanish if it rolled back. The saver's own writes are synchronous
 * (atomic on their own), so gating them on the mutex that wraps our transactions is
 * enough; its reads touch only its own tables, which our transactions never write.
 * (Two connections would be worse: a synchronous writer blocked on a lock that an
 * awaiting transaction holds on the same thread deadlocks until busy_timeout.)
 */
import type { Database } from 'better-sqlite3';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import type { AsyncMutex } from './async-mutex.js';

export class GatedSqliteSaver extends SqliteSaver {
  readonly #gate: AsyncMutex;

  constructor(db: Database, gate: AsyncMutex) {
    super(db);
    this.#gate = gate;
  }

  /**
   * Create the saver's tables now, at open, rather than lazily inside the first call,
   * which could otherwise run (and be rolled back) inside one of our transactions.
   */
  prepare(): void {
    this.setup();
  }

  override put(...args: Parameters<SqliteSaver['put']>): ReturnType<SqliteSaver['put']> {
    return this.#gate.run(() => super.put(...args));
  }

  override putWrites(...args: Parameters<SqliteSaver['putWrites']>): ReturnType<SqliteSaver['putWrites']> {
    return this.#gate.run(() => super.putWrites(...args));
  }

  override deleteThread(...args: Parameters<SqliteSaver['deleteThread']>): ReturnType<SqliteSaver['deleteThread']> {
    return this.#gate.run(() => super.deleteThread(...args));
  }
}
