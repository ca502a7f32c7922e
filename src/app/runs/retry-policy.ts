import { isVigilError } from '../../domain/errors.js';

/**
 * When a failed model call is tried again. The run coordinator is the one place that
 * retries (the LangChain clients are built with `maxRetries: 0`), so a failing model
 * never multiplies calls and every retry passes the caller's `beforeRetry` check (I5).
 */
export interface RetryPolicy {
  /** Retries after the first attempt. */
  maxRetries: number;
  /** Backoff before the first retry, doubled for each further one. */
  backoffMs: number;
}

/** The wait before retry number `attempts` (1-based), or null when the run must give up. */
export function retryDelay(error: unknown, attempts: number, policy: RetryPolicy, signal: AbortSignal): number | null {
  if (signal.aborted || attempts > policy.maxRetries) return null;
  // A VigilError below 500 is a decision (a validation, a bound), not a passing failure.
  if (isVigilError(error) && error.status < 500) return null;
  return policy.backoffMs * 2 ** (attempts - 1);
}

/** Wait, unless the run is cancelled meanwhile. */
export function sleep(milliseconds: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, milliseconds);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
