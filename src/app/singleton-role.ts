/**
 * Work only one instance may do at a time (a "role"): long polling a chat channel that
 * allows one consumer (Telegram's getUpdates answers a second poller with 409). A port
 * with two adapters: in-process (one instance: always granted) and a PostgreSQL advisory
 * lock held on a dedicated connection (adapters/locks), released by PostgreSQL when the
 * holder dies, so another instance takes the role over within its retry interval.
 */
export interface RoleLease {
  /** Aborted when the role was lost (the holding connection broke): stop the work at once. */
  readonly lost: AbortSignal;
  release(): Promise<void>;
}

export interface SingletonRoles {
  /** Wait until this instance holds the role; undefined when `signal` aborts first. */
  acquire(role: string, signal: AbortSignal): Promise<RoleLease | undefined>;
  /** The roles this instance holds now (/readyz). */
  held(): string[];
  close(): Promise<void>;
}

/** One instance: every role is ours, at once (a second acquire of the same role waits for the first's release). */
export class InProcessSingletonRoles implements SingletonRoles {
  private readonly holders = new Map<string, Promise<void>>();

  async acquire(role: string, signal: AbortSignal): Promise<RoleLease | undefined> {
    while (this.holders.has(role)) {
      if (signal.aborted) return undefined;
      const aborted = new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      await Promise.race([this.holders.get(role), aborted]);
    }
    if (signal.aborted) return undefined;
    let release!: () => void;
    this.holders.set(role, new Promise<void>((resolve) => (release = resolve)));
    let released = false;
    return {
      lost: new AbortController().signal,
      release: async () => {
        if (released) return;
        released = true;
        this.holders.delete(role);
        release();
      },
    };
  }

  held(): string[] {
    return [...this.holders.keys()].sort();
  }

  async close(): Promise<void> {}
}
