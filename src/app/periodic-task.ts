/**
 * Background housekeeping that repeats: a first pass after `initialDelayMs`, then one every
 * `intervalMs` after the previous pass ended. One pass at a time (`runOnce` during a pass
 * answers that pass); `stop` waits for a pass in flight. The pass logs its own errors: a
 * rejected pass does not stop the schedule. Timers are unref'd so they never hold a process.
 */
export class PeriodicTask<T> {
  readonly #pass: () => Promise<T>;
  readonly #initialDelayMs: number;
  readonly #intervalMs: number;
  #timer: NodeJS.Timeout | undefined;
  #inFlight: Promise<T> | undefined;
  #stopped = false;

  constructor(pass: () => Promise<T>, timing: { initialDelayMs: number; intervalMs: number }) {
    this.#pass = pass;
    this.#initialDelayMs = timing.initialDelayMs;
    this.#intervalMs = timing.intervalMs;
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  /** Idempotent; does nothing after `stop`. */
  start(): void {
    if (this.#timer || this.#stopped) return;
    this.#arm(this.#initialDelayMs);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#inFlight?.catch(() => undefined);
  }

  /** One pass now (or the one in flight). */
  runOnce(): Promise<T> {
    this.#inFlight ??= this.#pass().finally(() => {
      this.#inFlight = undefined;
    });
    return this.#inFlight;
  }

  #arm(delayMs: number): void {
    this.#timer = setTimeout(() => {
      void this.runOnce()
        .catch(() => undefined)
        .finally(() => {
          if (!this.#stopped) this.#arm(this.#intervalMs);
        });
    }, delayMs);
    this.#timer.unref();
  }
}
