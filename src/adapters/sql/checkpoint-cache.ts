/**
 * The per-thread checkpoint cache both savers keep: the latest checkpoint of each recent
 * (thread, namespace), as the saver's read would return it, in a bounded LRU.
 *
 * Why: every turn starts by reading the thread's latest checkpoint, and deserialising a
 * long message list again costs more than the rest of the turn. The checkpoint read is
 * almost always the one this process wrote at the end of the previous turn, so the saver
 * keeps what it wrote and, before using it, asks the database only whether that is still
 * the latest (a small indexed query). An entry is never trusted without that question,
 * so a write by another process (another server on the same PostgreSQL) is a miss, not a
 * stale read.
 */
import type { RunnableConfig } from '@langchain/core/runnables';
import type { BaseCheckpointSaver, Checkpoint, CheckpointMetadata, CheckpointTuple } from '@langchain/langgraph-checkpoint';

export interface CheckpointCacheLimits {
  /** Threads (strictly: thread and namespace pairs) kept; 0 turns the cache off. */
  maxThreads: number;
  /**
   * Serialised bytes of the cached checkpoints (as stored in the database); the heap they
   * take is a small multiple of this. A checkpoint larger than this is never cached.
   */
  maxBytes: number;
}

export const DEFAULT_CHECKPOINT_CACHE_LIMITS: Readonly<CheckpointCacheLimits> = Object.freeze({
  maxThreads: 256,
  maxBytes: 64 * 1024 * 1024,
});

/** One cached checkpoint: the parts of the saver's tuple that depend on the stored row. */
export interface CachedCheckpoint {
  readonly threadId: string;
  readonly checkpointNs: string;
  readonly checkpointId: string;
  readonly parentCheckpointId: string | null;
  /** As the saver's getTuple returns it; never handed out itself, only detached copies. */
  readonly checkpoint: Checkpoint;
  readonly metadata: CheckpointMetadata | undefined;
  /** Serialised size, for the memory bound. */
  readonly bytes: number;
}

export interface CheckpointCacheStats {
  /** Reads answered from the cache (after the database confirmed the entry). */
  hits: number;
  /** Reads that went to the database (no entry, or the entry was not the current checkpoint). */
  misses: number;
  entries: number;
  bytes: number;
  evictions: number;
}

export class CheckpointCache<Entry extends CachedCheckpoint> {
  readonly #limits: CheckpointCacheLimits;
  /** Insertion order is recency: a used entry is moved to the end, eviction takes the front. */
  readonly #entries = new Map<string, Entry>();
  #bytes = 0;
  #hits = 0;
  #misses = 0;
  #evictions = 0;

  constructor(limits: Partial<CheckpointCacheLimits> = {}) {
    this.#limits = { ...DEFAULT_CHECKPOINT_CACHE_LIMITS, ...limits };
  }

  get enabled(): boolean {
    return this.#limits.maxThreads > 0 && this.#limits.maxBytes > 0;
  }

  /** The entry for a thread, marked most recently used. */
  lookup(threadId: string, checkpointNs: string): Entry | undefined {
    const key = keyOf(threadId, checkpointNs);
    const entry = this.#entries.get(key);
    if (entry !== undefined) {
      this.#entries.delete(key);
      this.#entries.set(key, entry);
    }
    return entry;
  }

  peek(threadId: string, checkpointNs: string): Entry | undefined {
    return this.#entries.get(keyOf(threadId, checkpointNs));
  }

  /** What this process just wrote: it replaces whatever the thread had. */
  remember(entry: Entry): void {
    this.#store(entry);
  }

  /**
   * What a read returned: kept unless the thread's entry is already a newer checkpoint
   * (a read that raced a write must not push the written one out; ids sort by time).
   */
  offer(entry: Entry): void {
    const held = this.peek(entry.threadId, entry.checkpointNs);
    if (held !== undefined && held.checkpointId >= entry.checkpointId) return;
    this.#store(entry);
  }

  forget(threadId: string, checkpointNs: string): void {
    this.#remove(keyOf(threadId, checkpointNs));
  }

  forgetThread(threadId: string): void {
    for (const [key, entry] of this.#entries) if (entry.threadId === threadId) this.#remove(key);
  }

  countHit(): void {
    this.#hits++;
  }

  countMiss(): void {
    this.#misses++;
  }

  stats(): CheckpointCacheStats {
    return { hits: this.#hits, misses: this.#misses, entries: this.#entries.size, bytes: this.#bytes, evictions: this.#evictions };
  }

  #store(entry: Entry): void {
    const key = keyOf(entry.threadId, entry.checkpointNs);
    this.#remove(key);
    if (!this.enabled || entry.bytes > this.#limits.maxBytes) return;
    this.#entries.set(key, entry);
    this.#bytes += entry.bytes;
    for (const [oldest] of this.#entries) {
      if (this.#entries.size <= this.#limits.maxThreads && this.#bytes <= this.#limits.maxBytes) break;
      this.#remove(oldest);
      this.#evictions++;
    }
  }

  #remove(key: string): void {
    const entry = this.#entries.get(key);
    if (entry === undefined) return;
    this.#entries.delete(key);
    this.#bytes -= entry.bytes;
  }
}

/** A thread id may hold any character, so the key is a JSON pair, not a joined string. */
function keyOf(threadId: string, checkpointNs: string): string {
  return JSON.stringify([threadId, checkpointNs]);
}

/**
 * The cache key parts of a saver call, or undefined when the call is one the cache leaves
 * alone (no thread id, or ids of unusual types whose database comparison it would have
 * to imitate).
 */
export function cacheAddress(configurable: Record<string, unknown> | undefined): { threadId: string; checkpointNs: string; checkpointId: string | undefined } | undefined {
  const threadId: unknown = configurable?.thread_id;
  // Both savers default only a missing namespace; a null one matches nothing.
  const checkpointNs: unknown = configurable?.checkpoint_ns === undefined ? '' : configurable.checkpoint_ns;
  const checkpointId: unknown = configurable?.checkpoint_id;
  if (typeof threadId !== 'string' || threadId === '' || typeof checkpointNs !== 'string') return undefined;
  if (checkpointId !== undefined && checkpointId !== null && checkpointId !== '' && typeof checkpointId !== 'string') return undefined;
  return { threadId, checkpointNs, checkpointId: typeof checkpointId === 'string' && checkpointId !== '' ? checkpointId : undefined };
}

/** A saver that can read past its cache (both of vigil's savers). */
interface StorageReader {
  getTupleFromStorage(config: RunnableConfig): Promise<CheckpointTuple | undefined>;
}

/**
 * Reads a checkpoint from the database itself, past any cache: for checks that must see
 * what was stored (the start-up I3 probe), not what this process remembers writing.
 * Any other saver is simply asked for the tuple.
 */
export function readFromStorage(saver: BaseCheckpointSaver, config: RunnableConfig): Promise<CheckpointTuple | undefined> {
  const reader = saver as BaseCheckpointSaver & Partial<StorageReader>;
  return typeof reader.getTupleFromStorage === 'function' ? reader.getTupleFromStorage(config) : saver.getTuple(config);
}
