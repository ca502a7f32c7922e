/**
 * LangGraph's SqliteSaver (@langchain/langgraph-checkpoint-sqlite 1.0.4), ported line by
 * line from better-sqlite3 to Node's built-in `node:sqlite`: same tables, same rows,
 * same results (LangChain's conformance suite runs against it).
 *
 * Why a port: the published saver imports better-sqlite3, a native addon that is built
 * from source on machines without a prebuilt binary and then fails to load under a
 * different Node (see DESIGN.md, "Known pitfalls"). vigil's SQLite saver extends this
 * class; the benchmark also runs it bare as "LangGraph's SqliteSaver on node:sqlite".
 */
import type { DatabaseSync, SQLInputValue, StatementSync } from 'node:sqlite';
import type { RunnableConfig } from '@langchain/core/runnables';
import {
  BaseCheckpointSaver,
  TASKS,
  WRITES_IDX_MAP,
  copyCheckpoint,
  maxChannelVersion,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointTuple,
  type PendingWrite,
  type SerializerProtocol,
} from '@langchain/langgraph-checkpoint';
import { inSyncTransaction } from './node-sqlite.js';

interface CheckpointRow {
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string;
  parent_checkpoint_id: string | null;
  type: string | null;
  checkpoint: Uint8Array;
  metadata: Uint8Array;
  pending_writes: string;
  pending_sends: string;
}

interface StoredWrite {
  task_id: string;
  channel: string;
  type: string | null;
  value: string | null;
}

/** SqliteSaver's pending-writes subquery, verbatim (vigil's cached reads return it in the same order). */
export const PENDING_WRITES_COLUMN = `(
      SELECT
        json_group_array(
          json_object(
            'task_id', pw.task_id,
            'channel', pw.channel,
            'type', pw.type,
            'value', CAST(pw.value AS TEXT)
          )
        )
      FROM writes as pw
      WHERE pw.thread_id = checkpoints.thread_id
        AND pw.checkpoint_ns = checkpoints.checkpoint_ns
        AND pw.checkpoint_id = checkpoints.checkpoint_id
    ) as pending_writes`;

const PENDING_SENDS_COLUMN = `(
      SELECT
        json_group_array(
          json_object(
            'type', ps.type,
            'value', CAST(ps.value AS TEXT)
          )
        )
      FROM writes as ps
      WHERE ps.thread_id = checkpoints.thread_id
        AND ps.checkpoint_ns = checkpoints.checkpoint_ns
        AND ps.checkpoint_id = checkpoints.parent_checkpoint_id
        AND ps.channel = '${TASKS}'
      ORDER BY ps.idx
    ) as pending_sends`;

const SELECT_COLUMNS = `thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata,
  ${PENDING_WRITES_COLUMN},
  ${PENDING_SENDS_COLUMN}`;

function prepareRead(db: DatabaseSync, withCheckpointId: boolean): StatementSync {
  return db.prepare(
    `SELECT ${SELECT_COLUMNS} FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? ${
      withCheckpointId ? 'AND checkpoint_id = ?' : 'ORDER BY checkpoint_id DESC LIMIT 1'
    }`,
  );
}

export class NodeSqliteSaver extends BaseCheckpointSaver {
  readonly db: DatabaseSync;
  protected isSetup = false;
  #withoutCheckpoint: StatementSync | undefined;
  #withCheckpoint: StatementSync | undefined;
  /** Statements prepared once per saver, by SQL text (SqliteSaver prepares them on every call). */
  readonly #statements = new Map<string, StatementSync>();

  constructor(db: DatabaseSync, serde?: SerializerProtocol) {
    super(serde);
    this.db = db;
  }

  protected setup(): void {
    if (this.isSetup) return;
    this.db.exec(`
CREATE TABLE IF NOT EXISTS checkpoints (
  thread_id TEXT NOT NULL,
  checkpoint_ns TEXT NOT NULL DEFAULT '',
  checkpoint_id TEXT NOT NULL,
  parent_checkpoint_id TEXT,
  type TEXT,
  checkpoint BLOB,
  metadata BLOB,
  PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
);`);
    this.db.exec(`
CREATE TABLE IF NOT EXISTS writes (
  thread_id TEXT NOT NULL,
  checkpoint_ns TEXT NOT NULL DEFAULT '',
  checkpoint_id TEXT NOT NULL,
  task_id TEXT NOT NULL,
  idx INTEGER NOT NULL,
  channel TEXT NOT NULL,
  type TEXT,
  value BLOB,
  PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
);`);
    this.#withoutCheckpoint = prepareRead(this.db, false);
    this.#withCheckpoint = prepareRead(this.db, true);
    this.isSetup = true;
  }

  getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    return this.readTuple(config, false);
  }

  /** getTuple; `fresh` asks subclasses to rebuild values from the rows alone, using no memory. */
  protected async readTuple(config: RunnableConfig, fresh: boolean): Promise<CheckpointTuple | undefined> {
    this.setup();
    const { thread_id, checkpoint_ns = '', checkpoint_id } = (config.configurable ?? {}) as Record<string, unknown>;
    // better-sqlite3 bound a missing thread id as NULL (matching nothing); node:sqlite refuses undefined.
    const args = [thread_id ?? null, checkpoint_ns] as SQLInputValue[];
    if (checkpoint_id) args.push(checkpoint_id as SQLInputValue);
    const row = (checkpoint_id ? this.#withCheckpoint! : this.#withoutCheckpoint!).get(...args) as CheckpointRow | undefined;
    if (row === undefined) return undefined;
    let finalConfig = config;
    if (!checkpoint_id) {
      finalConfig = { configurable: { thread_id: row.thread_id, checkpoint_ns, checkpoint_id: row.checkpoint_id } };
    }
    if (finalConfig.configurable?.thread_id === undefined || finalConfig.configurable?.checkpoint_id === undefined) {
      throw new Error('Missing thread_id or checkpoint_id');
    }
    return this.tupleFromRow(row, finalConfig, checkpoint_ns as string, fresh);
  }

  async *list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple> {
    const { limit, before, filter } = options ?? {};
    this.setup();
    const thread_id = config.configurable?.thread_id as unknown;
    const checkpoint_ns = config.configurable?.checkpoint_ns as unknown;
    let sql = `SELECT ${SELECT_COLUMNS} FROM checkpoints\n`;
    const whereClause: string[] = [];
    if (thread_id) whereClause.push('thread_id = ?');
    if (checkpoint_ns !== undefined && checkpoint_ns !== null) whereClause.push('checkpoint_ns = ?');
    if (before?.configurable?.checkpoint_id !== undefined) whereClause.push('checkpoint_id < ?');
    const sanitizedFilter = Object.fromEntries(Object.entries(filter ?? {}).filter(([, value]) => value !== undefined));
    whereClause.push(...Object.keys(sanitizedFilter).map(() => 'jsonb(CAST(metadata AS TEXT))->? = ?'));
    if (whereClause.length > 0) sql += `WHERE\n  ${whereClause.join(' AND\n  ')}\n`;
    sql += '\nORDER BY checkpoint_id DESC';
    if (limit) sql += ` LIMIT ${parseInt(String(limit), 10)}`;
    const args = [
      thread_id,
      checkpoint_ns,
      before?.configurable?.checkpoint_id as unknown,
      ...Object.entries(sanitizedFilter).flatMap(([key, value]) => [`$.${key}`, JSON.stringify(value)]),
    ].filter((value) => value !== undefined && value !== null) as SQLInputValue[];
    const rows = this.db.prepare(sql).all(...args) as unknown as CheckpointRow[];
    for (const row of rows) {
      yield await this.tupleFromRow(row, { configurable: { thread_id: row.thread_id, checkpoint_ns: row.checkpoint_ns, checkpoint_id: row.checkpoint_id } }, row.checkpoint_ns, false);
    }
  }

  async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata): Promise<RunnableConfig> {
    this.setup();
    if (!config.configurable) throw new Error('Empty configuration supplied.');
    const thread_id = config.configurable.thread_id as string | undefined;
    const checkpoint_ns = (config.configurable.checkpoint_ns as string | undefined) ?? '';
    const parent_checkpoint_id = (config.configurable.checkpoint_id as string | undefined) ?? null;
    if (!thread_id) throw new Error(`Missing "thread_id" field in passed "config.configurable".`);
    const preparedCheckpoint = await this.prepareForStorage(thread_id, checkpoint_ns, copyCheckpoint(checkpoint));
    const [[type1, serializedCheckpoint], [type2, serializedMetadata]] = await Promise.all([
      this.serde.dumpsTyped(preparedCheckpoint),
      this.serde.dumpsTyped(metadata),
    ]);
    if (type1 !== type2) throw new Error('Failed to serialized checkpoint and metadata to the same type.');
    this.statement('INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)')
      .run(thread_id, checkpoint_ns, checkpoint.id, parent_checkpoint_id, type1, this.storedDocument(serializedCheckpoint), serializedMetadata);
    return { configurable: { thread_id, checkpoint_ns, checkpoint_id: checkpoint.id } };
  }

  async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string): Promise<void> {
    this.setup();
    if (!config.configurable) throw new Error('Empty configuration supplied.');
    if (!config.configurable.thread_id) throw new Error('Missing thread_id field in config.configurable.');
    if (!config.configurable.checkpoint_id) throw new Error('Missing checkpoint_id field in config.configurable.');
    const allSpecial = writes.every(([channel]) => channel in WRITES_IDX_MAP);
    const statement = this.statement(`
      INSERT ${allSpecial ? 'OR REPLACE' : 'OR IGNORE'} INTO writes
      (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?)
    `);
    const values = await this.prepareWritesForStorage(String(config.configurable.thread_id), (config.configurable.checkpoint_ns as string | undefined) ?? '', writes.map((write) => write[1]));
    const rows = await Promise.all(
      writes.map(async (write, idx) => {
        const [type, serializedWrite] = await this.serde.dumpsTyped(values[idx]);
        return [
          config.configurable?.thread_id,
          config.configurable?.checkpoint_ns ?? '',
          config.configurable?.checkpoint_id,
          taskId,
          WRITES_IDX_MAP[write[0]] ?? idx,
          write[0],
          type,
          serializedWrite,
        ] as SQLInputValue[];
      }),
    );
    inSyncTransaction(this.db, () => {
      for (const row of rows) statement.run(...row);
    });
  }

  async deleteThread(threadId: string): Promise<void> {
    this.setup();
    inSyncTransaction(this.db, () => {
      this.db.prepare('DELETE FROM checkpoints WHERE thread_id = ?').run(threadId);
      this.db.prepare('DELETE FROM writes WHERE thread_id = ?').run(threadId);
    });
  }

  protected statement(sql: string): StatementSync {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      statement = this.db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  /** What put stores for the checkpoint (a subclass may store some channels elsewhere). */
  protected async prepareForStorage(threadId: string, checkpointNs: string, checkpoint: Checkpoint): Promise<Checkpoint> {
    void threadId;
    void checkpointNs;
    return checkpoint;
  }

  /** The stored checkpoint as put was given it (the inverse of prepareForStorage). */
  protected async restoreFromStorage(threadId: string, checkpointNs: string, checkpoint: Checkpoint, fresh: boolean): Promise<Checkpoint> {
    void threadId;
    void checkpointNs;
    void fresh;
    return checkpoint;
  }

  /** What putWrites stores for the writes' values (a subclass may store some elsewhere). */
  protected async prepareWritesForStorage(threadId: string, checkpointNs: string, values: unknown[]): Promise<unknown[]> {
    void threadId;
    void checkpointNs;
    return values;
  }

  /** The inverse of prepareWritesForStorage. */
  protected async restoreWritesFromStorage(threadId: string, checkpointNs: string, values: unknown[], fresh: boolean): Promise<unknown[]> {
    void threadId;
    void checkpointNs;
    void fresh;
    return values;
  }

  /** The bytes stored for a serialised checkpoint (SqliteSaver stores it as it is; vigil's saver packs it). */
  protected storedDocument(document: Uint8Array): Uint8Array {
    return document;
  }

  /** The serialised checkpoint that stored bytes hold (the inverse of storedDocument). */
  protected loadedDocument(stored: Uint8Array): Uint8Array {
    return stored;
  }

  protected async loadPendingWrites(json: string, threadId: string, checkpointNs: string, fresh: boolean): Promise<[string, string, unknown][]> {
    const stored = JSON.parse(json) as StoredWrite[];
    const loaded = await Promise.all(stored.map((write) => this.serde.loadsTyped(write.type ?? 'json', write.value ?? '')));
    const values = await this.restoreWritesFromStorage(threadId, checkpointNs, loaded, fresh);
    return stored.map((write, index) => [write.task_id, write.channel, values[index]] as [string, string, unknown]);
  }

  private async tupleFromRow(row: CheckpointRow, config: RunnableConfig, checkpointNs: string, fresh: boolean): Promise<CheckpointTuple> {
    const pendingWrites = await this.loadPendingWrites(row.pending_writes, row.thread_id, checkpointNs, fresh);
    let checkpoint = (await this.serde.loadsTyped(row.type ?? 'json', this.loadedDocument(row.checkpoint))) as Checkpoint;
    if (checkpoint.v < 4 && row.parent_checkpoint_id != null) await this.migratePendingSends(checkpoint, row.thread_id, row.parent_checkpoint_id);
    checkpoint = await this.restoreFromStorage(row.thread_id, checkpointNs, checkpoint, fresh);
    return {
      checkpoint,
      config,
      metadata: (await this.serde.loadsTyped(row.type ?? 'json', row.metadata)) as CheckpointMetadata,
      parentConfig: row.parent_checkpoint_id
        ? { configurable: { thread_id: row.thread_id, checkpoint_ns: checkpointNs, checkpoint_id: row.parent_checkpoint_id } }
        : undefined,
      pendingWrites,
    };
  }

  private async migratePendingSends(checkpoint: Checkpoint, threadId: string, parentCheckpointId: string): Promise<void> {
    const { pending_sends } = this.db
      .prepare(
        `SELECT checkpoint_id, json_group_array(json_object('type', ps.type, 'value', CAST(ps.value AS TEXT))) as pending_sends
         FROM writes as ps
         WHERE ps.thread_id = ? AND ps.checkpoint_id = ? AND ps.channel = '${TASKS}'
         ORDER BY ps.idx`,
      )
      .get(threadId, parentCheckpointId) as { pending_sends: string };
    const mutable = checkpoint as Checkpoint & { channel_values: Record<string, unknown> };
    mutable.channel_values ??= {};
    mutable.channel_values[TASKS] = await Promise.all(
      (JSON.parse(pending_sends) as { type: string; value: string }[]).map(({ type, value }) => this.serde.loadsTyped(type, value)),
    );
    mutable.channel_versions[TASKS] =
      Object.keys(checkpoint.channel_versions).length > 0 ? maxChannelVersion(...Object.values(checkpoint.channel_versions)) : this.getNextVersion(undefined);
  }
}
