/**
 * Triggers of the agent acting on its own whose every model call spends the agent's daily
 * autonomy budget (I5): a follow-up and a check-in it set itself. The first call is
 * reserved as the run is admitted, a retry before it runs; a tool loop's later calls and a
 * conversation summary reserve theirs as they come.
 */
export const BUDGETED_TRIGGERS: ReadonlySet<string> = new Set(['autonomy', 'check_in']);
