/**
 * One run at a time per thread (I8), within this process: a FIFO mutex per thread id.
 * Entries are removed when nobody holds or waits for the lock, so idle threads cost
 * nothing.
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
