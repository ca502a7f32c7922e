/**
 * LangGraph's PostgresSaver with a faster read path and a per-thread checkpoint cache.
 *
 * Same tables, same rows, same results: every method returns what PostgresSaver's would
 * (the conformance suite runs against this class as openStorage builds it). Two changes:
 *
 *  - reads fetch blobs and writes as plain bytea rows (see checkpoint-postgres-sql.ts);
 *  - put() remembers the checkpoint it wrote, as a read would return it, and a later
 *    getTuple for that checkpoint is answered from memory once the database has said, in
 *    the same single query that would otherwise fetch it, that the stored checkpoint is
 *    still that one (same id, same row digest, same blob rows). Another server writing
 *    to the thread changes the latest id, so this process misses and reads it.
 *
 * Written against @langchain/langgraph-checkpoint-postgres 1.0.5; getTuple, list and
 * put follow its code line by line (its protected helpers do the (de)serialising).
 */
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import type { RunnableConfig } from '@langchain/core/runnables';
import { WRITES_IDX_MAP, type ChannelVersions, type Checkpoint, type CheckpointListOptions, type CheckpointMetadata, type CheckpointTuple, type PendingWrite } from '@langchain/langgraph-checkpoint';
import type pg from 'pg';
import { CheckpointCache, cacheAddress, type CachedCheckpoint, type CheckpointCacheLimits, type CheckpointCacheStats } from '../checkpoint-cache.js';
import { checkpointStatements, checkpointTables, type CheckpointStatements } from './postgres-saver-sql.js';
import { CheckpointValueCodec, asJsonb, detach } from '../checkpoint-values.js';
import { HeldCheckpointWrites } from '../held-checkpoint-writes.js';
import { MessageLog, type MessageLogLimits } from './message-log.js';
import { PostgresMessageLogStore, postgresMessageLogDdl } from './message-log-postgres.js';

type BlobTriple = [Uint8Array, Uint8Array, Uint8Array];
type WriteQuad = [Uint8Array, Uint8Array, Uint8Array, Uint8Array];
type StoredCheckpoint = Omit<Checkpoint, 'pending_sends' | 'channel_values'>;

/** The blob row a checkpoint's channel version joins to, as the cache knows it. */
interface KnownBlob {
  version: string;
  type: string;
  /** octet_length of the stored blob (0 when NULL). */
  size: number;
  /** False for a channel emptied at this version: no row is stored for it (see #putNow). */
  stored: boolean;
}

interface PostgresEntry extends CachedCheckpoint {
  readonly digest: string;
  /** Channel → the blob row its version in channel_versions joins to. */
  readonly blobs: ReadonlyMap<string, KnownBlob>;
  readonly blobBytes: number;
}

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
  hit: boolean;
  digest: string;
  blobRows: (Omit<KnownBlob, 'stored'> & { channel: string })[];
}

interface RawRow {
  part: number;
  hit: boolean | null;
  digest: string | null;
  thread_id: string | null;
  checkpoint_ns: string | null;
  checkpoint_id: string | null;
  parent_checkpoint_id: string | null;
  checkpoint: StoredCheckpoint | null;
  metadata: Record<string, unknown> | null;
  version: string | null;
  size: number | null;
  task_id: Uint8Array | null;
  channel: Uint8Array | null;
  type: Uint8Array | null;
  blob: Uint8Array | null;
}

export interface CachingPostgresSaverOptions {
  schema: string;
  /** Cache bounds (defaults: DEFAULT_CHECKPOINT_CACHE_LIMITS); `maxThreads: 0` turns it off. */
  cache?: Partial<CheckpointCacheLimits>;
  /** What the message log keeps loaded (see message-log.ts); `maxThreads: 0` keeps nothing. */
  messageLog?: Partial<MessageLogLimits>;
}

const decoder = new TextDecoder();

export class CachingPostgresSaver extends PostgresSaver {
  readonly #pool: pg.Pool;
  readonly #sql: CheckpointStatements;
  readonly #cache: CheckpointCache<PostgresEntry>;
  readonly #codec: CheckpointValueCodec;
  readonly #logTable: string;
  readonly #log: MessageLog;
  /** Input checkpoints and task writes that the next checkpoint supersedes (see held-checkpoint-writes.ts). */
  readonly #held = new HeldCheckpointWrites({
    putNow: (put) => this.#putNow(put.config, put.checkpoint, put.metadata, put.newVersions),
    putWritesNow: (held) => this.#putWritesNow(held.config, held.writes, held.taskId),
  });

  constructor(pool: pg.Pool, options: CachingPostgresSaverOptions) {
    super(pool, undefined, { schema: options.schema });
    this.#pool = pool;
    this.#sql = checkpointStatements(checkpointTables(options.schema));
    this.#cache = new CheckpointCache(options.cache);
    this.#codec = new CheckpointValueCodec(this.serde);
    // Quoted as checkpointTables quotes the saver's own tables.
    this.#logTable = `"${options.schema}".checkpoint_messages`;
    this.#log = new MessageLog(new PostgresMessageLogStore(pool, this.#logTable), this.serde, options.messageLog);
  }

  /** PostgresSaver's tables and migrations, then the message log's table. */
  override async setup(): Promise<void> {
    await super.setup();
    for (const statement of postgresMessageLogDdl(this.#logTable)) await this.#pool.query(statement);
  }

  cacheStats(): CheckpointCacheStats {
    return this.#cache.stats();
  }

  override getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    return this.#read(config, true);
  }

  /** getTuple straight from the tables, neither using nor filling the cache (for checks of what is stored). */
  getTupleFromStorage(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    return this.#read(config, false);
  }

  async #read(config: RunnableConfig, useCache: boolean): Promise<CheckpointTuple | undefined> {
    const { thread_id, checkpoint_ns = '', checkpoint_id } = (config.configurable ?? {}) as Record<string, unknown>;
    const address = useCache && this.#cache.enabled ? cacheAddress(config.configurable) : undefined;
    const held = address ? this.#cache.lookup(address.threadId, address.checkpointNs) : undefined;
    const usable = held !== undefined && (address?.checkpointId === undefined || address.checkpointId === held.checkpointId) ? held : undefined;
    const probe = usable === undefined ? [null, null, null, null] : [usable.checkpointId, usable.digest, storedCount(usable.blobs), usable.blobBytes];
    const [sql, args] = checkpoint_id
      ? [this.#sql.readById, [thread_id, checkpoint_ns, checkpoint_id, ...probe]]
      : [this.#sql.readLatest, [thread_id, checkpoint_ns, ...probe]];
    const [row] = readRows((await this.#pool.query<RawRow>(sql, args)).rows);
    if (row === undefined) return undefined;
    if (row.hit && usable !== undefined) {
      this.#cache.countHit();
      this.#log.vouch(String(thread_id), String(checkpoint_ns));
      return {
        config: { configurable: { thread_id, checkpoint_ns, checkpoint_id: row.checkpoint_id } },
        checkpoint: detach(usable.checkpoint),
        metadata: detach(usable.metadata),
        parentConfig: row.parent_checkpoint_id ? { configurable: { thread_id, checkpoint_ns, checkpoint_id: row.parent_checkpoint_id } } : undefined,
        pendingWrites: await this.#pendingWrites(String(thread_id), String(checkpoint_ns), row.pending_writes as WriteQuad[], false),
      };
    }
    if (address !== undefined) {
      this.#cache.countMiss();
      // Not the stored checkpoint any more (or its row was rewritten): drop it, so the read below can take its place.
      if (usable !== undefined) this.#cache.forget(address.threadId, address.checkpointNs);
    }

    // PostgresSaver.getTuple from here on.
    if (row.checkpoint.v < 4 && row.parent_checkpoint_id != null) {
      const [sendsRow] = (await this.#pool.query<{ pending_sends: [Uint8Array, Uint8Array][] }>(this.#sql.pendingSends, [thread_id, [row.parent_checkpoint_id]])).rows;
      if (sendsRow != null) await this._migratePendingSends(sendsRow.pending_sends, row as { channel_values: BlobTriple[]; checkpoint: StoredCheckpoint });
    }
    const checkpoint = await this._loadCheckpoint(row.checkpoint, row.channel_values as BlobTriple[]);
    checkpoint.channel_values = await this.#log.fromStored(String(thread_id), String(checkpoint_ns), checkpoint.channel_values, { fresh: !useCache });
    const tuple: CheckpointTuple = {
      config: { configurable: { thread_id, checkpoint_ns, checkpoint_id: row.checkpoint_id } },
      checkpoint,
      metadata: (await this._loadMetadata(row.metadata)) as CheckpointMetadata,
      parentConfig: row.parent_checkpoint_id ? { configurable: { thread_id, checkpoint_ns, checkpoint_id: row.parent_checkpoint_id } } : undefined,
      pendingWrites: await this.#pendingWrites(String(thread_id), String(checkpoint_ns), row.pending_writes as WriteQuad[], !useCache),
    };
    // Only the latest is kept: an older checkpoint read by id must not displace it.
    if (address !== undefined && address.checkpointId === undefined && checkpoint.v >= 4) {
      this.#cache.offer(this.#entryFromRead(address.threadId, address.checkpointNs, row, tuple));
    }
    return tuple;
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

  override put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig> {
    return this.#held.put(config, checkpoint, metadata, newVersions);
  }

  override putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string): Promise<void> {
    return this.#held.putWrites(config, writes, taskId);
  }

  settle(threadId: string): Promise<void> {
    return this.#held.settle(threadId);
  }

  async #putNow(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig> {
    // PostgresSaver.put, noting which blobs were inserted and what the row holds after.
    if (config.configurable === undefined) throw new Error(`Missing "configurable" field in "config" param`);
    const { thread_id, checkpoint_ns = '', checkpoint_id } = config.configurable as Record<string, string | undefined> & { thread_id: string };
    const nextConfig = { configurable: { thread_id, checkpoint_ns, checkpoint_id: checkpoint.id } };
    const serializedCheckpoint = this._dumpCheckpoint(checkpoint);
    // Started before anything awaits, so the cache entry and the stored values are the
    // values of this call even if the graph moves on meanwhile.
    const address = cacheAddress({ thread_id, checkpoint_ns });
    const derivation = address !== undefined && this.#cache.enabled && this.#codec.derivesWrites ? this.#startDerivation(checkpoint, newVersions, address) : undefined;
    const values = { ...checkpoint.channel_values };
    const metadataDump = this._dumpMetadata(metadata);
    metadataDump.catch(() => undefined);
    // Message lists go to the thread's message log; the blob holds a reference (see message-log.ts).
    const stored = await this.#log.toStored(String(thread_id), checkpoint_ns, values, Object.keys(newVersions));
    const [serializedBlobs, serializedMetadata] = await Promise.all([this._dumpBlobs(thread_id, checkpoint_ns, stored, newVersions), metadataDump]);
    // A channel emptied at this version (a consumed input or branch) needs no row: a read
    // finds no blob for the version and leaves the channel out, as it does for 'empty'.
    const blobRows = serializedBlobs.filter((blob) => blob[4] !== 'empty');
    const result = await this.#pool.query<{ parent_checkpoint_id: string | null; digest: string; inserted: [string, string][] }>(this.#sql.putCheckpoint, [
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
    const row = result.rows[0];
    const inserted = new Set((row?.inserted ?? []).map(([channel, version]) => blobKey(channel, version)));
    if (derivation !== undefined && address !== undefined && row !== undefined) {
      // A checkpoint the cache cannot describe exactly is simply not cached; the write
      // itself has succeeded either way.
      const entry = await derivation
        .finish({ serializedCheckpoint, serializedMetadata, serializedBlobs, inserted, stored: row })
        .catch(() => undefined);
      if (entry !== undefined) this.#cache.remember(entry);
      else this.#cache.forget(address.threadId, address.checkpointNs);
    }
    return nextConfig;
  }

  /** PostgresSaver's writes, with messages the message log holds in place of their references. */
  async #pendingWrites(threadId: string, checkpointNs: string, writes: WriteQuad[], fresh: boolean): Promise<[string, string, unknown][]> {
    const loaded = await this._loadWrites(writes);
    const values = await this.#log.fromStoredWrites(threadId, checkpointNs, loaded.map((write) => write[2]), { fresh });
    return loaded.map(([taskId, channel], index) => [taskId, channel, values[index]]);
  }

  /** PostgresSaver.putWrites in one statement (see putWrites in checkpoint-postgres-sql.ts). */
  async #putWritesNow(config: RunnableConfig, writes: PendingWrite[], taskId: string): Promise<void> {
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

  /** PostgresSaver.putWrites serialises through this: messages go to the message log first. */
  protected override async _dumpWrites(threadId: string, checkpointNs: string, checkpointId: string, taskId: string, writes: [string, unknown][]) {
    const values = await this.#log.toStoredWrites(String(threadId), checkpointNs ?? '', writes.map((write) => write[1]));
    return super._dumpWrites(threadId, checkpointNs, checkpointId, taskId, writes.map(([channel], index) => [channel, values[index]] as [string, unknown]));
  }

  override async deleteThread(threadId: string): Promise<void> {
    this.#held.forgetThread(String(threadId));
    try {
      await super.deleteThread(threadId);
      await this.#pool.query(`DELETE FROM ${this.#logTable} WHERE thread_id = $1`, [threadId]);
    } finally {
      this.#cache.forgetThread(String(threadId));
      this.#log.forgetThread(String(threadId));
    }
  }

  /**
   * The cache entry from a database read: the tuple's checkpoint and metadata (detached
   * from the copy the caller gets) and the blob rows it was assembled from.
   */
  #entryFromRead(threadId: string, checkpointNs: string, row: ReadRow, tuple: CheckpointTuple): PostgresEntry {
    const checkpoint = detach(tuple.checkpoint);
    for (const value of Object.values(checkpoint.channel_values)) this.#codec.adopt(value);
    const blobs = new Map<string, KnownBlob>();
    let blobBytes = 0;
    for (const blob of row.blobRows) {
      blobs.set(blob.channel, { version: blob.version, type: blob.type, size: blob.size, stored: true });
      blobBytes += blob.size;
    }
    // A version with no row is a channel emptied there (no 'empty' row is stored).
    for (const [channel, version] of Object.entries(checkpoint.channel_versions)) {
      const text = versionText(version);
      if (text !== undefined && blobs.get(channel)?.version !== text) blobs.set(channel, { version: text, type: 'empty', size: 0, stored: false });
    }
    return {
      threadId,
      checkpointNs,
      checkpointId: row.checkpoint_id,
      parentCheckpointId: row.parent_checkpoint_id,
      checkpoint,
      metadata: detach(tuple.metadata),
      bytes: blobBytes,
      digest: row.digest,
      blobs,
      blobBytes,
    };
  }

  /**
   * Starts building the entry for a checkpoint being written: the values of the channels
   * it writes as a read would load them, the rest from the thread's current entry (blob
   * rows never change, and the read-time check catches any that were deleted).
   */
  #startDerivation(checkpoint: Checkpoint, newVersions: ChannelVersions, address: { threadId: string; checkpointNs: string }) {
    const base = this.#cache.peek(address.threadId, address.checkpointNs);
    const values = new Map<string, Promise<unknown>>();
    for (const channel of Object.keys(newVersions)) {
      if (channel in checkpoint.channel_values && Array.isArray(checkpoint.channel_values[channel])) {
        values.set(channel, this.#codec.roundTrip(checkpoint.channel_values[channel]));
      }
    }
    // Unhandled rejections are avoided: finish() awaits each one it uses, and an unused
    // one (its blob already existed) is silenced here.
    for (const promise of values.values()) promise.catch(() => undefined);
    return {
      finish: async (written: {
        serializedCheckpoint: Record<string, unknown>;
        serializedMetadata: unknown;
        serializedBlobs: [string, string, string, string, string, Uint8Array | undefined][];
        inserted: ReadonlySet<string>;
        stored: { parent_checkpoint_id: string | null; digest: string };
      }): Promise<PostgresEntry | undefined> => {
        const stored = asJsonb(written.serializedCheckpoint) as StoredCheckpoint;
        if (typeof stored.v !== 'number' || stored.v < 4) return undefined;
        const versions: Record<string, unknown> = stored.channel_versions ?? {};
        const ours = new Map(written.serializedBlobs.map((blob) => [blobKey(blob[2], blob[3]), blob]));
        const blobs = new Map<string, KnownBlob>();
        const channelValues: Record<string, unknown> = {};
        let blobBytes = 0;
        for (const [channel, version] of Object.entries(versions)) {
          const text = versionText(version);
          if (text === undefined) return undefined;
          const key = blobKey(channel, text);
          const own = ours.get(key);
          const inserted = written.inserted.has(key);
          const mine = inserted || own?.[4] === 'empty' ? own : undefined;
          if (mine !== undefined) {
            const [, , , , type, bytes] = mine;
            const size = bytes?.byteLength ?? 0;
            blobs.set(channel, { version: text, type, size, stored: inserted });
            blobBytes += size;
            if (type === 'empty') continue;
            if (type === 'bytes') channelValues[channel] = Buffer.from(bytes ?? new Uint8Array());
            else channelValues[channel] = await (values.get(channel) ?? this.serde.loadsTyped(type, bytes ?? new Uint8Array()));
            continue;
          }
          const known = base?.blobs.get(channel);
          if (known === undefined || known.version !== text) return undefined;
          blobs.set(channel, known);
          blobBytes += known.size;
          if (known.type !== 'empty') {
            if (!(channel in base!.checkpoint.channel_values)) return undefined;
            channelValues[channel] = base!.checkpoint.channel_values[channel];
          }
        }
        const checkpointValue = {
          ...stored,
          channel_versions: stored.channel_versions ?? {},
          versions_seen: stored.versions_seen ?? {},
          channel_values: channelValues,
        } as Checkpoint;
        return {
          threadId: address.threadId,
          checkpointNs: address.checkpointNs,
          checkpointId: checkpoint.id,
          parentCheckpointId: written.stored.parent_checkpoint_id,
          checkpoint: checkpointValue,
          metadata: (await this._loadMetadata(asJsonb(written.serializedMetadata) as Record<string, unknown>)) as CheckpointMetadata,
          bytes: blobBytes,
          digest: written.stored.digest,
          blobs,
          blobBytes,
        };
      },
    };
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
        hit: part.hit === true,
        digest: part.digest ?? '',
        blobRows: [],
      };
      rows.push(current);
    } else if (part.part === 1 && current !== undefined) {
      (current.channel_values ??= []).push([part.channel!, part.type!, part.blob!]);
      current.blobRows.push({ channel: decoder.decode(part.channel!), version: part.version!, type: decoder.decode(part.type!), size: part.size ?? 0 });
    } else if (part.part === 2 && current !== undefined) {
      (current.pending_writes ??= []).push([part.task_id!, part.channel!, part.type!, part.blob!]);
    }
  }
  return rows;
}

function blobKey(channel: string, version: string): string {
  return JSON.stringify([channel, version]);
}

/**
 * The text jsonb_each_text gives for a channel version (what the blob join compares
 * against the version column), for the versions LangGraph uses; undefined for any other,
 * which the cache then leaves alone.
 */
function storedCount(blobs: ReadonlyMap<string, KnownBlob>): number {
  let count = 0;
  for (const blob of blobs.values()) if (blob.stored) count += 1;
  return count;
}

function versionText(version: unknown): string | undefined {
  if (typeof version === 'string') return version;
  if (typeof version === 'number' && Number.isSafeInteger(version)) return String(version);
  return undefined;
}
