/**
 * The checkpoint saver vigil used on PostgreSQL before the thread store (migration 25), kept
 * so the conversion (thread-conversion.ts) can read what it wrote: LangGraph's PostgresSaver
 * (its tables in the storage's schema, made by its own setup(), not by vigil's migrations)
 * with message lists stored as references into the thread's message log,
 * `checkpoint_messages` (message-log.ts), and its reads and writes as single statements
 * (postgres-saver-sql.ts).
 *
 * Only what reading and writing that format needs is kept: the checkpoint cache (whose
 * check the read statement still carries, always answered "no" here) and the holding back of
 * superseded writes were how the running server used it; the conversion runs at open, and
 * tests write the old format with it call by call.
 *
 * Written against @langchain/langgraph-checkpoint-postgres 1.0.5; getTuple, list and
 * put follow its code line by line (its protected helpers do the (de)serialising).
 */
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import type { RunnableConfig } from '@langchain/core/runnables';
import { WRITES_IDX_MAP, type ChannelVersions, type Checkpoint, type CheckpointListOptions, type CheckpointMetadata, type CheckpointTuple, type PendingWrite } from '@langchain/langgraph-checkpoint';
import type pg from 'pg';
import { checkpointStatements, checkpointTables, type CheckpointStatements } from './postgres-saver-sql.js';
import { MessageLog, type MessageLogLimits } from './message-log.js';
import { PostgresMessageLogStore, postgresMessageLogDdl } from './message-log-postgres.js';

type BlobTriple = [Uint8Array, Uint8Array, Uint8Array];
type WriteQuad = [Uint8Array, Uint8Array, Uint8Array, Uint8Array];
type StoredCheckpoint = Omit<Checkpoint, 'pending_sends' | 'channel_values'>;

/** One checkpoint as the read query returns it, in the shape PostgresSaver's rows have. */
interface ReadRow {
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string;
  parent_checkpoint_id: string | null;
  checkpoint: StoredCheckpoint;
  metadata: Record<string, unknown>;
  channel_values: BlobTriple[] | null;
  pending_writes: WriteQuad[] | null;
}

interface RawRow {
  part: number;
  thread_id: string | null;
  checkpoint_ns: string | null;
  checkpoint_id: string | null;
  parent_checkpoint_id: string | null;
  checkpoint: StoredCheckpoint | null;
  metadata: Record<string, unknown> | null;
  task_id: Uint8Array | null;
  channel: Uint8Array | null;
  type: Uint8Array | null;
  blob: Uint8Array | null;
}

export interface LegacyPostgresSaverOptions {
  schema: string;
  /** What the message log keeps loaded (see message-log.ts); `maxThreads: 0` keeps nothing. */
  messageLog?: Partial<MessageLogLimits>;
}

/** The read statement's cache check, asked of no entry: never a hit, so every read returns the whole checkpoint. */
const NO_CACHED_ENTRY = [null, null, null, null];

export class LegacyPostgresSaver extends PostgresSaver {
  readonly #pool: pg.Pool;
  readonly #sql: CheckpointStatements;
  readonly #logTable: string;
  readonly #log: MessageLog;

  /** `pool`: any pool on the database (tables are named with their schema); end() ends it. */
  constructor(pool: pg.Pool, options: LegacyPostgresSaverOptions) {
    super(pool, undefined, { schema: options.schema });
    this.#pool = pool;
    this.#sql = checkpointStatements(checkpointTables(options.schema));
    // Quoted as checkpointTables quotes the saver's own tables.
    this.#logTable = `"${options.schema}".checkpoint_messages`;
    this.#log = new MessageLog(new PostgresMessageLogStore(pool, this.#logTable), this.serde, options.messageLog);
  }

  /** PostgresSaver's tables and migrations, then the message log's table (CREATE TABLE IF NOT EXISTS, as the old server did at every open). */
  override async setup(): Promise<void> {
    await super.setup();
    for (const statement of postgresMessageLogDdl(this.#logTable)) await this.#pool.query(statement);
  }

  override getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    return this.#read(config, false);
  }

  /** getTuple with every message from its row, nothing from or into the log's memory. */
  getTupleFromStorage(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    return this.#read(config, true);
  }

  async #read(config: RunnableConfig, fresh: boolean): Promise<CheckpointTuple | undefined> {
    // PostgresSaver.getTuple, with the plain-row query.
    const { thread_id, checkpoint_ns = '', checkpoint_id } = (config.configurable ?? {}) as Record<string, unknown>;
    const [sql, args] = checkpoint_id
      ? [this.#sql.readById, [thread_id, checkpoint_ns, checkpoint_id, ...NO_CACHED_ENTRY]]
      : [this.#sql.readLatest, [thread_id, checkpoint_ns, ...NO_CACHED_ENTRY]];
    const [row] = readRows((await this.#pool.query<RawRow>(sql, args)).rows);
    if (row === undefined) return undefined;
    if (row.checkpoint.v < 4 && row.parent_checkpoint_id != null) {
      const [sendsRow] = (await this.#pool.query<{ pending_sends: [Uint8Array, Uint8Array][] }>(this.#sql.pendingSends, [thread_id, [row.parent_checkpoint_id]])).rows;
      if (sendsRow != null) await this._migratePendingSends(sendsRow.pending_sends, row as { channel_values: BlobTriple[]; checkpoint: StoredCheckpoint });
    }
    const checkpoint = await this._loadCheckpoint(row.checkpoint, row.channel_values as BlobTriple[]);
    checkpoint.channel_values = await this.#log.fromStored(String(thread_id), String(checkpoint_ns), checkpoint.channel_values, { fresh });
    return {
      config: { configurable: { thread_id, checkpoint_ns, checkpoint_id: row.checkpoint_id } },
      checkpoint,
      metadata: (await this._loadMetadata(row.metadata)) as CheckpointMetadata,
      parentConfig: row.parent_checkpoint_id ? { configurable: { thread_id, checkpoint_ns, checkpoint_id: row.parent_checkpoint_id } } : undefined,
      pendingWrites: await this.#pendingWrites(String(thread_id), String(checkpoint_ns), row.pending_writes as WriteQuad[], fresh),
    };
  }

  override async *list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple> {
    // PostgresSaver.list, with the plain-row query.
    const { filter, before, limit } = options ?? {};
    const [where, args] = this._searchWhere(config, filter, before);
    const sql = this.#sql.list(where, limit === undefined ? undefined : Number.parseInt(limit.toString(), 10));
    const rows = readRows((await this.#pool.query<RawRow>(sql, args)).rows);
    const toMigrate = rows.filter((row) => row.checkpoint.v < 4 && row.parent_checkpoint_id != null);
    if (toMigrate.length > 0) {
      const sendsResult = await this.#pool.query<{ checkpoint_id: string; pending_sends: [Uint8Array, Uint8Array][] }>(this.#sql.pendingSends, [
        toMigrate[0]!.thread_id,
        toMigrate.map((row) => row.parent_checkpoint_id),
      ]);
      const parentMap: Record<string, ReadRow[]> = {};
      for (const row of toMigrate) {
        if (!row.parent_checkpoint_id) continue;
        (parentMap[row.parent_checkpoint_id] ??= []).push(row);
      }
      for (const sendsRow of sendsResult.rows) {
        for (const row of parentMap[sendsRow.checkpoint_id] ?? []) {
          await this._migratePendingSends(sendsRow.pending_sends, row as { channel_values: BlobTriple[]; checkpoint: StoredCheckpoint });
        }
      }
    }
    for (const value of rows) {
      const checkpoint = await this._loadCheckpoint(value.checkpoint, value.channel_values as BlobTriple[]);
      checkpoint.channel_values = await this.#log.fromStored(value.thread_id, value.checkpoint_ns, checkpoint.channel_values);
      yield {
        config: { configurable: { thread_id: value.thread_id, checkpoint_ns: value.checkpoint_ns, checkpoint_id: value.checkpoint_id } },
        checkpoint,
        metadata: (await this._loadMetadata(value.metadata)) as CheckpointMetadata,
        parentConfig: value.parent_checkpoint_id
          ? { configurable: { thread_id: value.thread_id, checkpoint_ns: value.checkpoint_ns, checkpoint_id: value.parent_checkpoint_id } }
          : undefined,
        pendingWrites: await this.#pendingWrites(value.thread_id, value.checkpoint_ns, value.pending_writes as WriteQuad[], false),
      };
    }
  }

  override async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig> {
    // PostgresSaver.put, as one statement.
    if (config.configurable === undefined) throw new Error(`Missing "configurable" field in "config" param`);
    const { thread_id, checkpoint_ns = '', checkpoint_id } = config.configurable as Record<string, string | undefined> & { thread_id: string };
    const nextConfig = { configurable: { thread_id, checkpoint_ns, checkpoint_id: checkpoint.id } };
    const serializedCheckpoint = this._dumpCheckpoint(checkpoint);
    const values = { ...checkpoint.channel_values };
    const metadataDump = this._dumpMetadata(metadata);
    metadataDump.catch(() => undefined);
    // Message lists go to the thread's message log; the blob holds a reference (see message-log.ts).
    const stored = await this.#log.toStored(String(thread_id), checkpoint_ns, values, Object.keys(newVersions));
    const [serializedBlobs, serializedMetadata] = await Promise.all([this._dumpBlobs(thread_id, checkpoint_ns, stored, newVersions), metadataDump]);
    // A channel emptied at this version (a consumed input or branch) needs no row: a read
    // finds no blob for the version and leaves the channel out, as it does for 'empty'.
    const blobRows = serializedBlobs.filter((blob) => blob[4] !== 'empty');
    await this.#pool.query(this.#sql.putCheckpoint, [
      thread_id,
      checkpoint_ns,
      blobRows.map((blob) => blob[2]),
      blobRows.map((blob) => blob[3]),
      blobRows.map((blob) => blob[4]),
      blobRows.map((blob) => blob[5] ?? null),
      checkpoint.id,
      checkpoint_id,
      serializedCheckpoint,
      serializedMetadata,
    ]);
    return nextConfig;
  }

  /** PostgresSaver.putWrites in one statement (see putWrites in postgres-saver-sql.ts). */
  override async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string): Promise<void> {
    const upsert = writes.every(([channel]) => channel in WRITES_IDX_MAP);
    const { thread_id, checkpoint_ns, checkpoint_id } = (config.configurable ?? {}) as Record<string, string | undefined>;
    const dumped = await this._dumpWrites(String(thread_id), checkpoint_ns ?? '', String(checkpoint_id), taskId, writes);
    // One row per idx: PostgresSaver's loop let a later write of a special channel replace
    // an earlier one; a single statement may not touch a row twice, so the last is kept here.
    const rows = upsert ? [...new Map(dumped.map((write) => [write[4], write])).values()] : dumped;
    await this.#pool.query(this.#sql.putWrites(upsert), [
      thread_id,
      checkpoint_ns ?? '',
      checkpoint_id,
      taskId,
      rows.map((write) => write[4]),
      rows.map((write) => write[5]),
      rows.map((write) => write[6]),
      rows.map((write) => write[7]),
    ]);
  }

  /** PostgresSaver's writes, with messages the message log holds in place of their references. */
  async #pendingWrites(threadId: string, checkpointNs: string, writes: WriteQuad[], fresh: boolean): Promise<[string, string, unknown][]> {
    const loaded = await this._loadWrites(writes);
    const values = await this.#log.fromStoredWrites(threadId, checkpointNs, loaded.map((write) => write[2]), { fresh });
    return loaded.map(([taskId, channel], index) => [taskId, channel, values[index]]);
  }

  /** PostgresSaver.putWrites serialises through this: messages go to the message log first. */
  protected override async _dumpWrites(threadId: string, checkpointNs: string, checkpointId: string, taskId: string, writes: [string, unknown][]) {
    const values = await this.#log.toStoredWrites(String(threadId), checkpointNs ?? '', writes.map((write) => write[1]));
    return super._dumpWrites(threadId, checkpointNs, checkpointId, taskId, writes.map(([channel], index) => [channel, values[index]] as [string, unknown]));
  }

  override async deleteThread(threadId: string): Promise<void> {
    try {
      await super.deleteThread(threadId);
      await this.#pool.query(`DELETE FROM ${this.#logTable} WHERE thread_id = $1`, [threadId]);
    } finally {
      this.#log.forgetThread(String(threadId));
    }
  }
}

/** Groups the read query's rows into one PostgresSaver-shaped row per checkpoint. */
function readRows(raw: readonly RawRow[]): ReadRow[] {
  const rows: ReadRow[] = [];
  let current: ReadRow | undefined;
  for (const part of raw) {
    if (part.part === 0) {
      current = {
        thread_id: part.thread_id!,
        checkpoint_ns: part.checkpoint_ns!,
        checkpoint_id: part.checkpoint_id!,
        parent_checkpoint_id: part.parent_checkpoint_id,
        checkpoint: part.checkpoint!,
        metadata: part.metadata!,
        // array_agg over no rows is NULL: PostgresSaver's loaders expect exactly that.
        channel_values: null,
        pending_writes: null,
      };
      rows.push(current);
    } else if (part.part === 1 && current !== undefined) {
      (current.channel_values ??= []).push([part.channel!, part.type!, part.blob!]);
    } else if (part.part === 2 && current !== undefined) {
      (current.pending_writes ??= []).push([part.task_id!, part.channel!, part.type!, part.blob!]);
    }
  }
  return rows;
}
