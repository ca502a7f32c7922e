import { sql } from 'kysely';
import type { BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';
import type { AgentRepository, MemoryStore, RunRepository, Storage, ThreadRepository } from '../../app/ports.js';
import { SqlAgentRepository } from './agent-repository.js';
import type { SqlContext } from './database.js';
import { SqlMemoryStore } from './memory-store.js';
import { SqlRunRepository } from './run-repository.js';
import { SqlThreadRepository } from './thread-repository.js';

/** The repositories over one Kysely database, plus the checkpointer on the same backend. */
export class SqlStorage implements Storage {
  readonly kind: Storage['kind'];
  readonly agents: AgentRepository;
  readonly threads: ThreadRepository;
  readonly runs: RunRepository;
  readonly memories: MemoryStore;
  readonly checkpointer: BaseCheckpointSaver;
  /**
   * The Kysely database, for feature repositories the composition root builds over the
   * same connection (each extends the table types with `db.withTables<…>()`).
   */
  readonly context: SqlContext;
  readonly #release: () => Promise<void>;
  #closing: Promise<void> | undefined;

  constructor(context: SqlContext, checkpointer: BaseCheckpointSaver, release: () => Promise<void>) {
    this.kind = context.dialect;
    this.context = context;
    this.checkpointer = checkpointer;
    this.#release = release;
    this.agents = new SqlAgentRepository(context);
    this.threads = new SqlThreadRepository(context);
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
