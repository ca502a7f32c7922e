import { sql } from 'kysely';
import type { AgentRepository, MemoryStore, RunRepository, Storage, ThreadRepository } from '../../app/ports.js';
import { SqlAgentRepository } from './agent-repository.js';
import type { SqlContext } from './database.js';
import { SqlMemoryStore } from './memory-store.js';
import { SqlRunRepository } from './run-repository.js';
import { SqlThreadRepository } from './thread-repository.js';
import type { ThreadSaver } from './thread-saver.js';

/** The repositories over one Kysely database, plus the checkpointer on the same backend (and the same thread store: history is its rows). */
export class SqlStorage implements Storage {
  readonly kind: Storage['kind'];
  readonly agents: AgentRepository;
  readonly threads: ThreadRepository;
  readonly runs: RunRepository;
  readonly memories: MemoryStore;
  readonly checkpointer: ThreadSaver;
  /**
   * The Kysely database, for feature repositories the composition root builds over the
   * same connection (each extends the table types with `db.withTables<…>()`).
   */
  readonly context: SqlContext;
  readonly #release: () => Promise<void>;
  #closing: Promise<void> | undefined;

  constructor(context: SqlContext, checkpointer: ThreadSaver, release: () => Promise<void>) {
    this.kind = context.dialect;
    this.context = context;
    this.checkpointer = checkpointer;
    this.#release = release;
    this.agents = new SqlAgentRepository(context);
    this.threads = new SqlThreadRepository(context, (key, rows) => checkpointer.historyMessages(key, rows));
    this.runs = new SqlRunRepository(context);
    this.memories = new SqlMemoryStore(context);
  }

  async ping(): Promise<void> {
    await sql`select 1`.execute(this.context.db);
  }

  /** Idempotent: every call waits for the same single shutdown. */
  close(): Promise<void> {
    this.#closing ??= this.#release();
    return this.#closing;
  }
}
