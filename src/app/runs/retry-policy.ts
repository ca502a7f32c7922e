import type { ModelFailure } from './model-failure.js';

/**
 * When a failed model call is tried again. The run coordinator is the one place that
 * retries: the LangChain clients are built with `maxRetries: 0` (model-factory.ts). Were
 * both to retry, every coordinator attempt would hide up to N client retries — calls no
 * cap counted — and a 429's wait would be spent twice; here every retry is counted, passes
 * the caller's `beforeRetry` check (an autonomous run's caps, I5) and is logged.
 */
export interface RetryPolicy {
  /** Retries after the first attempt. */
  maxRetries: number;
  /** Backoff before the first retry, doubled for each further one. */
  backoffMs: number;
  /**
   * The longest wait a provider's `retry-after` may impose. A longer one is not waited
   * for: the run ends at once (MODEL_RATE_LIMITED) rather than holding the thread's lock.
   */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { maxRetries: 2, backoffMs: 500, maxRetryAfterMs: 30_000 };

export type RetryDecision = { retry: true; delayMs: number } | { retry: false; why: string };

/** Whether retry number `attempts` (1-based: the attempt that just failed) happens, and after how long. */
export function retryDecision(failure: ModelFailure, attempts: number, policy: RetryPolicy, signal: AbortSignal): RetryDecision {
  if (signal.aborted) return { retry: false, why: 'the run was cancelled' };
  if (!failure.retryable) return { retry: false, why: 'trying again cannot help' };
  if (attempts > policy.maxRetries) return { retry: false, why: `no retries left (${policy.maxRetries})` };
  const backoffMs = policy.backoffMs * 2 ** (attempts - 1);
  if (failure.retryAfterMs === undefined) return { retry: true, delayMs: backoffMs };
  if (failure.retryAfterMs > policy.maxRetryAfterMs) return { retry: false, why: `the provider asked to wait ${Math.ceil(failure.retryAfterMs / 1000)} s, more than the ${Math.ceil(policy.maxRetryAfterMs / 1000)} s this server waits` };
  return { retry: true, delayMs: Math.max(backoffMs, failure.retryAfterMs) };
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
