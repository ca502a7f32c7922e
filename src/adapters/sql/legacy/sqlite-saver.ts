/**
 * LangGraph's SqliteSaver (ported to node:sqlite, see checkpoint-sqlite-base.ts) on the same connection as Kysely, with its
 * writes held back while one of our transactions is open, and a per-thread cache of the
 * latest checkpoint.
 *
 * Why the gate: one connection means one transaction scope. Our transactions await
 * between statements, and a checkpoint write landing in such a gap would silently join
 * our transaction and vanish if it rolled back. The saver's own writes are synchronous
 * (atomic on their own), so gating them on the mutex that wraps our transactions is
 * enough; its reads touch only its own tables, which our transactions never write.
 * (Two connections would be worse: a synchronous writer blocked on a lock that an
 * awaiting transaction holds on the same thread deadlocks until busy_timeout.)
 *
 * Why the cache (see checkpoint-cache.ts): SqliteSaver stores each checkpoint as one
 * serialised document, and reading a long thread back means deserialising every message
 * again. put() keeps what a read would return; getTuple() uses it once a small query
 * (id, parent, stored sizes, and the pending writes a read must return anyway) confirms
 * the stored checkpoint is still that one. Everything else is SqliteSaver's own code.
 */
import { createHash } from 'node:crypto';
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import type { RunnableConfig } from '@langchain/core/runnables';
import { copyCheckpoint, type ChannelVersions, type Checkpoint, type CheckpointMetadata, type CheckpointTuple, type PendingWrite } from '@langchain/langgraph-checkpoint';
import type { AsyncMutex } from '../async-mutex.js';
import { CheckpointCache, cacheAddress, type CachedCheckpoint, type CheckpointCacheLimits, type CheckpointCacheStats } from '../checkpoint-cache.js';
import { packCheckpointDocument, unpackCheckpointDocument } from './checkpoint-document-codec.js';
import { CheckpointValueCodec, detach } from '../checkpoint-values.js';
import { NodeSqliteSaver, PENDING_WRITES_COLUMN } from '../checkpoint-sqlite-base.js';
import { MessageLog, rangesOf, type MessageLogLimits } from './message-log.js';
import { SQLITE_MESSAGE_LOG_DDL, SqliteMessageLogStore } from './message-log-sqlite.js';
import { HeldCheckpointWrites } from '../held-checkpoint-writes.js';
import { inSyncTransaction } from '../node-sqlite.js';

interface SqliteEntry extends CachedCheckpoint {
  /** Stored lengths of the row's documents: a rewrite of the same id would change them. */
  readonly checkpointBytes: number;
  readonly metadataBytes: number;
}

interface ProbeRow {
  thread_id: string;
  checkpoint_id: string;
  parent_checkpoint_id: string | null;
  checkpoint_bytes: number;
  metadata_bytes: number;
  pending_writes: string;
}

interface SizeRow {
  parent_checkpoint_id: string | null;
  checkpoint_bytes: number;
  metadata_bytes: number;
}


/**
 * Channel values other than message lists (the conversation summary, recalled memories)
 * are stored once per distinct value, by content hash, and a checkpoint keeps the hash:
 * SqliteSaver stores every channel in every checkpoint, so a 2,000-token summary was
 * copied into each of a turn's four checkpoints. (PostgresSaver's checkpoint_blobs does
 * the same per channel version.) Small values stay inline.
 */
const VALUES_DDL = `CREATE TABLE IF NOT EXISTS checkpoint_values (
  thread_id TEXT NOT NULL,
  checkpoint_ns TEXT NOT NULL DEFAULT '',
  hash TEXT NOT NULL,
  type TEXT NOT NULL,
  value BLOB NOT NULL,
  PRIMARY KEY (thread_id, checkpoint_ns, hash)
)`;
/** The key of the reference a checkpoint stores in place of a channel value kept in checkpoint_values. */
export const STORED_VALUE_REF = 'vigil:value';
/** Serialised values below this many bytes stay in the checkpoint. */
const INLINE_VALUE_BYTES = 128;

const PROBE_COLUMNS = `thread_id, checkpoint_id, parent_checkpoint_id,
  length(checkpoint) AS checkpoint_bytes, length(metadata) AS metadata_bytes, ${PENDING_WRITES_COLUMN}`;

export class GatedSqliteSaver extends NodeSqliteSaver {
  readonly #gate: AsyncMutex;
  readonly #cache: CheckpointCache<SqliteEntry>;
  readonly #codec: CheckpointValueCodec;
  #probeLatest: StatementSync | undefined;
  #probeById: StatementSync | undefined;
  #sizes: StatementSync | undefined;
  #log: MessageLog | undefined;
  #insertValue: StatementSync | undefined;
  #readValue: StatementSync | undefined;
  readonly #logLimits: Partial<MessageLogLimits> | undefined;
  /** Input checkpoints and task writes that the next checkpoint supersedes (see held-checkpoint-writes.ts). */
  readonly #held = new HeldCheckpointWrites({
    putNow: (put) => this.#putNow(put.config, put.checkpoint, put.metadata, put.newVersions),
    putWritesNow: (held) => this.#gate.run(() => super.putWrites(held.config, held.writes, held.taskId)),
  });

  constructor(db: DatabaseSync, gate: AsyncMutex, options: { cache?: Partial<CheckpointCacheLimits>; messageLog?: Partial<MessageLogLimits> } = {}) {
    super(db);
    this.#gate = gate;
    this.#cache = new CheckpointCache(options.cache);
    this.#codec = new CheckpointValueCodec(this.serde);
    this.#logLimits = options.messageLog;
  }

  /**
   * Create the saver's tables now, at open, rather than lazily inside the first call,
   * which could otherwise run (and be rolled back) inside one of our transactions.
   */
  prepare(): void {
    this.setup();
    for (const statement of SQLITE_MESSAGE_LOG_DDL) this.db.exec(statement);
    this.db.exec(VALUES_DDL);
    this.#log = new MessageLog(new SqliteMessageLogStore(this.db), this.serde, this.#logLimits);
    this.#insertValue = this.db.prepare('INSERT OR IGNORE INTO checkpoint_values (thread_id, checkpoint_ns, hash, type, value) VALUES (?, ?, ?, ?, ?)');
    this.#readValue = this.db.prepare('SELECT type, value FROM checkpoint_values WHERE thread_id = ? AND checkpoint_ns = ? AND hash = ?');
    this.#probeLatest = this.db.prepare(`SELECT ${PROBE_COLUMNS} FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? ORDER BY checkpoint_id DESC LIMIT 1`);
    this.#probeById = this.db.prepare(`SELECT ${PROBE_COLUMNS} FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?`);
    this.#sizes = this.db.prepare(
      `SELECT parent_checkpoint_id, length(checkpoint) AS checkpoint_bytes, length(metadata) AS metadata_bytes
       FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?`,
    );
  }

  cacheStats(): CheckpointCacheStats {
    return this.#cache.stats();
  }

  /** getTuple straight from the table, neither using nor filling the cache (for checks of what is stored). */
  getTupleFromStorage(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    return this.readTuple(config, true);
  }

  override async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const address = cacheAddress(config.configurable);
    if (address === undefined || !this.#cache.enabled || this.#probeLatest === undefined) return super.getTuple(config);
    const held = this.#cache.lookup(address.threadId, address.checkpointNs);
    if (held !== undefined && (address.checkpointId === undefined || address.checkpointId === held.checkpointId)) {
      const probe = (
        address.checkpointId === undefined
          ? this.#probeLatest.get(address.threadId, address.checkpointNs)
          : this.#probeById!.get(address.threadId, address.checkpointNs, address.checkpointId)
      ) as ProbeRow | undefined;
      if (probe !== undefined && isStill(held, probe)) {
        this.#cache.countHit();
        this.#log?.vouch(address.threadId, address.checkpointNs);
        return this.#tupleFromCache(config, address, held, probe);
      }
      // Not the stored checkpoint any more (or its row was rewritten): drop it, so the read below can take its place.
      this.#cache.forget(address.threadId, address.checkpointNs);
    }
    this.#cache.countMiss();
    const tuple = await super.getTuple(config);
    // Only the latest is kept: an older checkpoint read by id must not displace it.
    if (tuple !== undefined && address.checkpointId === undefined && tuple.checkpoint.v >= 4) {
      const entry = this.#entryFromRead(address, tuple);
      if (entry !== undefined) this.#cache.offer(entry);
    }
    return tuple;
  }

  override put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions = {}): Promise<RunnableConfig> {
    return this.#held.put(config, checkpoint, metadata, newVersions);
  }

  override putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string): Promise<void> {
    return this.#held.putWrites(config, writes, taskId);
  }

  settle(threadId: string): Promise<void> {
    return this.#held.settle(threadId);
  }

  #putNow(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions?: ChannelVersions): Promise<RunnableConfig> {
    return this.#gate.run(async () => {
      const address = cacheAddress(config.configurable);
      // SqliteSaver stores every channel on every put, so it takes no newVersions.
      void newVersions;
      if (address === undefined || !this.#cache.enabled) return super.put(config, checkpoint, metadata);
      // The row is about to change under this id: no read may use the old entry meanwhile.
      if (this.#cache.peek(address.threadId, address.checkpointNs)?.checkpointId === checkpoint.id) this.#cache.forget(address.threadId, address.checkpointNs);
      // Serialised now, just before the saver serialises the same values.
      const derivation = this.#codec.derivesWrites ? this.#derive(address, checkpoint, metadata) : undefined;
      derivation?.catch(() => undefined);
      const result = await super.put(config, checkpoint, metadata);
      const derived = await derivation?.catch(() => undefined);
      const sizes = derived === undefined ? undefined : (this.#sizes!.get(address.threadId, address.checkpointNs, checkpoint.id) as SizeRow | undefined);
      if (derived !== undefined && sizes !== undefined) {
        this.#cache.remember({ ...derived, ...entrySizes(sizes), parentCheckpointId: sizes.parent_checkpoint_id });
      } else {
        this.#cache.forget(address.threadId, address.checkpointNs);
      }
      return result;
    });
  }

  override deleteThread(threadId: string): Promise<void> {
    this.#held.forgetThread(String(threadId));
    return this.#gate.run(async () => {
      try {
        await super.deleteThread(threadId);
        if (this.#log !== undefined) {
          inSyncTransaction(this.db, () => {
            this.db.prepare('DELETE FROM checkpoint_messages WHERE thread_id = ?').run(threadId);
            this.db.prepare('DELETE FROM checkpoint_values WHERE thread_id = ?').run(threadId);
          });
        }
      } finally {
        this.#cache.forgetThread(String(threadId));
        this.#log?.forgetThread(String(threadId));
      }
    });
  }

  /** Packed against a dictionary of typical checkpoints (see checkpoint-document-codec.ts). */
  protected override storedDocument(document: Uint8Array): Uint8Array {
    return packCheckpointDocument(document);
  }

  protected override loadedDocument(stored: Uint8Array): Uint8Array {
    return unpackCheckpointDocument(stored);
  }

  /** Message lists go to the thread's message log; the checkpoint keeps a reference (see message-log.ts). */
  protected override async prepareForStorage(threadId: string, checkpointNs: string, checkpoint: Checkpoint): Promise<Checkpoint> {
    if (this.#log === undefined) return checkpoint;
    const values = await this.#log.toStored(String(threadId), checkpointNs, checkpoint.channel_values);
    const stored: Record<string, unknown> = { ...values };
    for (const [channel, value] of Object.entries(values)) {
      if (value === undefined || (typeof value !== 'string' && typeof value !== 'object') || value === null || rangesOf(value) !== undefined) continue;
      // Wrapped in an array: stored and loaded as it would be inside the checkpoint's document.
      const [type, dumped] = await this.serde.dumpsTyped([value]);
      const bytes = typeof dumped === 'string' ? new TextEncoder().encode(dumped) : dumped;
      if (bytes.byteLength < INLINE_VALUE_BYTES) continue;
      const hash = createHash('sha256').update(type).update('\0').update(bytes).digest('base64url');
      this.#insertValue!.run(String(threadId), checkpointNs, hash, type, bytes);
      stored[channel] = { [STORED_VALUE_REF]: hash };
    }
    return { ...checkpoint, channel_values: stored };
  }

  protected override async prepareWritesForStorage(threadId: string, checkpointNs: string, values: unknown[]): Promise<unknown[]> {
    return this.#log === undefined ? values : this.#log.toStoredWrites(threadId, checkpointNs, values);
  }

  protected override async restoreWritesFromStorage(threadId: string, checkpointNs: string, values: unknown[], fresh: boolean): Promise<unknown[]> {
    return this.#log === undefined ? values : this.#log.fromStoredWrites(threadId, checkpointNs, values, { fresh });
  }

  protected override async restoreFromStorage(threadId: string, checkpointNs: string, checkpoint: Checkpoint, fresh: boolean): Promise<Checkpoint> {
    if (this.#log === undefined) return checkpoint;
    const values: Record<string, unknown> = { ...(checkpoint.channel_values ?? {}) };
    for (const [channel, value] of Object.entries(values)) {
      const hash = storedValueHash(value);
      if (hash === undefined) continue;
      const row = this.#readValue!.get(String(threadId), checkpointNs, hash) as { type: string; value: Uint8Array } | undefined;
      if (row === undefined) throw new Error(`checkpoint value ${hash} of thread ${threadId} is missing`);
      values[channel] = ((await this.serde.loadsTyped(row.type, row.value)) as unknown[])[0];
    }
    return { ...checkpoint, channel_values: await this.#log.fromStored(String(threadId), checkpointNs, values, { fresh }) };
  }

  /** What SqliteSaver.getTuple builds from its row, with the checkpoint and metadata from the cache. */
  async #tupleFromCache(
    config: RunnableConfig,
    address: { checkpointNs: string; checkpointId: string | undefined },
    entry: SqliteEntry,
    probe: ProbeRow,
  ): Promise<CheckpointTuple> {
    const checkpointNs = address.checkpointNs;
    const finalConfig: RunnableConfig = address.checkpointId
      ? config
      : { configurable: { thread_id: probe.thread_id, checkpoint_ns: checkpointNs, checkpoint_id: probe.checkpoint_id } };
    const pendingWrites = await this.loadPendingWrites(probe.pending_writes, probe.thread_id, checkpointNs, false);
    return {
      checkpoint: detach(entry.checkpoint),
      config: finalConfig,
      metadata: detach(entry.metadata),
      parentConfig: probe.parent_checkpoint_id
        ? { configurable: { thread_id: probe.thread_id, checkpoint_ns: checkpointNs, checkpoint_id: probe.parent_checkpoint_id } }
        : undefined,
      pendingWrites,
    };
  }

  /** The entry for a checkpoint read from the database, detached from the caller's copy. */
  #entryFromRead(address: { threadId: string; checkpointNs: string }, tuple: CheckpointTuple): SqliteEntry | undefined {
    const checkpointId = tuple.config.configurable?.checkpoint_id as unknown;
    if (typeof checkpointId !== 'string') return undefined;
    const sizes = this.#sizes!.get(address.threadId, address.checkpointNs, checkpointId) as SizeRow | undefined;
    if (sizes === undefined) return undefined;
    const checkpoint = detach(tuple.checkpoint);
    for (const value of Object.values(checkpoint.channel_values)) this.#codec.adopt(value);
    return {
      threadId: address.threadId,
      checkpointNs: address.checkpointNs,
      checkpointId,
      parentCheckpointId: sizes.parent_checkpoint_id,
      checkpoint,
      metadata: detach(tuple.metadata),
      ...entrySizes(sizes),
    };
  }

  /**
   * What getTuple will return for this checkpoint once SqliteSaver has stored it: the
   * round trip of copyCheckpoint(checkpoint) and of the metadata, one document each.
   * The small parts go through the real round trip; channel values through the codec,
   * which reuses the already-loaded messages of a long list.
   */
  #derive(address: { threadId: string; checkpointNs: string }, checkpoint: Checkpoint, metadata: CheckpointMetadata) {
    const prepared = copyCheckpoint(checkpoint);
    // The reviver would read a channel named "lc" as a serialisation marker on the
    // enclosing object; leave such a checkpoint to the database.
    if (prepared.v < 4 || Object.hasOwn(prepared.channel_values, 'lc')) return undefined;
    const skeleton = this.#codec.exact({ ...prepared, channel_values: {} });
    const values = Object.entries(prepared.channel_values).map(([channel, value]) => [channel, this.#codec.roundTrip(value)] as const);
    const loadedMetadata = this.#codec.exact(metadata);
    return (async (): Promise<Omit<SqliteEntry, 'bytes' | 'checkpointBytes' | 'metadataBytes' | 'parentCheckpointId'>> => {
      const loaded = await skeleton;
      const channelValues: Record<string, unknown> = {};
      for (const [channel, value] of values) channelValues[channel] = await value;
      loaded.channel_values = channelValues;
      return {
        threadId: address.threadId,
        checkpointNs: address.checkpointNs,
        checkpointId: checkpoint.id,
        checkpoint: loaded,
        metadata: await loadedMetadata,
      };
    })();
  }
}

function isStill(entry: SqliteEntry, probe: ProbeRow): boolean {
  return (
    probe.checkpoint_id === entry.checkpointId &&
    probe.parent_checkpoint_id === entry.parentCheckpointId &&
    probe.checkpoint_bytes === entry.checkpointBytes &&
    probe.metadata_bytes === entry.metadataBytes
  );
}

function entrySizes(sizes: SizeRow): { bytes: number; checkpointBytes: number; metadataBytes: number } {
  return { bytes: sizes.checkpoint_bytes + sizes.metadata_bytes, checkpointBytes: sizes.checkpoint_bytes, metadataBytes: sizes.metadata_bytes };
}

/** The hash of a stored-value reference, or undefined for any other value. */
function storedValueHash(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const keys = Object.keys(value);
  if (keys.length !== 1 || keys[0] !== STORED_VALUE_REF) return undefined;
  const hash = (value as Record<string, unknown>)[STORED_VALUE_REF];
  return typeof hash === 'string' ? hash : undefined;
}
