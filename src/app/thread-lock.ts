/**
 * One run at a time per thread (I8). A port with two adapters: `InProcessThreadLocks`
 * below (one process: a FIFO mutex per thread), and the PostgreSQL one in
 * adapters/locks (an advisory lock per thread on a dedicated connection, on top of the
 * same in-process FIFO, so several instances on one database still run one at a time).
 */
export interface ThreadLease {
  /**
   * Aborted when a person's message asks the thread's run to yield (I8). The holder
   * decides whether to honour it: an autonomous run does, a person's own run does not.
   */
  readonly yieldRequested: AbortSignal;
  release(): Promise<void>;
}

export interface ThreadLockService {
  /**
   * Wait for the thread's lock (FIFO among waiters of this process). Called off by
   * `signal`, the wait ends at once with the signal's reason and leaves nothing behind:
   * the lock passes straight on when this waiter's turn comes, and a wait another
   * instance's holder keeps long (PostgreSQL) is cancelled, not left on a connection.
   */
  acquire(threadId: string, signal?: AbortSignal): Promise<ThreadLease>;
  /** The lock if nobody holds or waits for it, here or on another instance; else undefined at once. */
  tryAcquire(threadId: string): Promise<ThreadLease | undefined>;
  /** Ask whoever holds the thread's lock now — in this process or another — to yield. */
  requestYield(threadId: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * The lease `granted` will give, unless `signal` calls the wait off first: then the
 * signal's reason at once, and the lease, when it comes, is released unused (so the
 * waiters behind get the lock as if this one had never queued).
 */
export async function untilCalledOff(granted: Promise<ThreadLease>, signal: AbortSignal | undefined): Promise<ThreadLease> {
  if (signal === undefined) return granted;
  let stopWaiting: (() => void) | undefined;
  const calledOff = new Promise<never>((_, reject) => {
    stopWaiting = () => reject(signal.reason);
    if (signal.aborted) stopWaiting();
    else signal.addEventListener('abort', stopWaiting, { once: true });
  });
  try {
    return await Promise.race([granted, calledOff]);
  } catch (error) {
    void granted.then((lease) => lease.release()).catch(() => undefined);
    throw error;
  } finally {
    signal.removeEventListener('abort', stopWaiting!);
  }
}

/**
 * A FIFO mutex per thread id. Entries are removed when nobody holds or waits for the
 * lock, so idle threads cost nothing.
 */
export class ThreadLocks {
  private readonly tails = new Map<string, Promise<void>>();

  async acquire(threadId: string): Promise<() => void> {
    const previous = this.tails.get(threadId) ?? Promise.resolve();
    let release!: () => void;
    const current = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous.then(() => current);
    this.tails.set(threadId, tail);
    await previous;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      release();
      if (this.tails.get(threadId) === tail) this.tails.delete(threadId);
    };
  }

  isLocked(threadId: string): boolean {
    return this.tails.has(threadId);
  }
}

interface Holder {
  controller: AbortController;
  /** When this process granted the lease (its own clock). */
  acquiredAt: number;
}

/** The thread lock within one process. Yield requests reach the holder directly. */
export class InProcessThreadLocks implements ThreadLockService {
  private readonly mutex = new ThreadLocks();
  private readonly holders = new Map<string, Holder>();

  async acquire(threadId: string, signal?: AbortSignal): Promise<ThreadLease> {
    return untilCalledOff(
      this.mutex.acquire(threadId).then((release) => this.lease(threadId, release)),
      signal,
    );
  }

  async tryAcquire(threadId: string): Promise<ThreadLease | undefined> {
    // isLocked also counts waiters: a timer never jumps the queue ahead of a person.
    if (this.mutex.isLocked(threadId)) return undefined;
    return this.acquire(threadId);
  }

  async requestYield(threadId: string): Promise<void> {
    this.yieldHolder(threadId, Number.POSITIVE_INFINITY);
  }

  /**
   * Abort the holder's yield signal, unless its lease is newer than the request (a
   * request that arrives late from another instance must not hit the next run).
   */
  yieldHolder(threadId: string, requestedAt: number): boolean {
    const holder = this.holders.get(threadId);
    if (!holder || holder.acquiredAt > requestedAt) return false;
    holder.controller.abort(new Error('a person sent a message'));
    return true;
  }

  isLocked(threadId: string): boolean {
    return this.mutex.isLocked(threadId);
  }

  async close(): Promise<void> {}

  private lease(threadId: string, release: () => void): ThreadLease {
    const holder: Holder = { controller: new AbortController(), acquiredAt: Date.now() };
    this.holders.set(threadId, holder);
    let released = false;
    return {
      yieldRequested: holder.controller.signal,
      release: async () => {
        if (released) return;
        released = true;
        if (this.holders.get(threadId) === holder) this.holders.delete(threadId);
        release();
      },
    };
  }
}
