/**
 * Triggers of the agent acting on its own whose every model call spends the agent's daily
 * autonomy budget (I5): a follow-up and a check-in it set itself. The first call is
 * reserved as the run is admitted, a retry before it runs; a tool loop's later calls and a
 * conversation summary reserve theirs as they come.
 */
export const BUDGETED_TRIGGERS: ReadonlySet<string> = new Set(['autonomy', 'check_in']);

/**
 * The configurable key of an attempt's prepaid model call: `{ remaining: 1 }` when the run's
 * admission (or the retry's reservation) has already paid for the attempt's first model
 * call, which the graph then does not charge again; every later call of the attempt is.
 */
export const PREPAID_MODEL_CALL = 'vigil_prepaid_model_call';

export interface PrepaidModelCall {
  remaining: number;
}

/** Takes the attempt's prepaid call if there is one left (true), or not (false: the call must be paid). */
export function takePrepaidCall(configurable: Record<string, unknown> | undefined): boolean {
  const prepaid = configurable?.[PREPAID_MODEL_CALL] as PrepaidModelCall | undefined;
  if (prepaid === undefined || prepaid.remaining <= 0) return false;
  prepaid.remaining -= 1;
  return true;
}
