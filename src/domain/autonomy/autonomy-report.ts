/**
 * Is autonomy welcome? For each autonomous message: did the person answer, and how soon
 * (the seeds' "response rate by trigger type"). Computed from the run records, the
 * thread's history and the timers; nothing is inferred from message text.
 */
export interface ReportRun {
  id: string;
  threadId: string;
  /** `autonomy:<trigger_type>` for follow-ups, else the run trigger (cron, webhook, check_in, heartbeat). */
  triggerType: string;
  status: string;
}

export interface ReportMessage {
  threadId: string;
  seq: number;
  createdAt: string;
  runId: string | null;
}

export interface ReportTimer {
  triggerType: string;
  state: string;
  stateReason: string | null;
}

export interface TriggerReport {
  triggerType: string;
  runs: number;
  /** Visible messages the agent sent in these runs. */
  replies: number;
  answeredWithin1h: number;
  answeredWithin24h: number;
  /** Runs cancelled, and follow-ups cancelled before they fired. */
  cancelled: number;
  /** Follow-ups a cap or the budget stopped before any model call (I5). */
  capped: number;
}

const HOUR_MS = 3_600_000;
const CAP_REASONS = new Set(['cap_per_silence', 'cap_per_day', 'budget']);

/** `replies`: the agent's visible messages of these runs; `personMessages`: the person's own, per thread. */
export function buildAutonomyReport(runs: readonly ReportRun[], replies: readonly ReportMessage[], personMessages: readonly ReportMessage[], timers: readonly ReportTimer[]): TriggerReport[] {
  const byType = new Map<string, TriggerReport>();
  const entry = (triggerType: string) => {
    let report = byType.get(triggerType);
    if (!report) byType.set(triggerType, (report = { triggerType, runs: 0, replies: 0, answeredWithin1h: 0, answeredWithin24h: 0, cancelled: 0, capped: 0 }));
    return report;
  };
  const runType = new Map(runs.map((run) => [run.id, run.triggerType]));
  const personByThread = new Map<string, ReportMessage[]>();
  for (const message of personMessages) personByThread.set(message.threadId, [...(personByThread.get(message.threadId) ?? []), message]);
  for (const run of runs) {
    const report = entry(run.triggerType);
    report.runs += 1;
    if (run.status === 'cancelled') report.cancelled += 1;
  }
  for (const reply of replies) {
    const type = reply.runId ? runType.get(reply.runId) : undefined;
    if (type === undefined) continue;
    const report = entry(type);
    report.replies += 1;
    const answer = (personByThread.get(reply.threadId) ?? []).filter((message) => message.seq > reply.seq).sort((a, b) => a.seq - b.seq)[0];
    if (!answer) continue;
    const after = Date.parse(answer.createdAt) - Date.parse(reply.createdAt);
    if (after <= HOUR_MS) report.answeredWithin1h += 1;
    if (after <= 24 * HOUR_MS) report.answeredWithin24h += 1;
  }
  for (const timer of timers) {
    const type = `autonomy:${timer.triggerType}`;
    if (timer.state === 'cancelled') entry(type).cancelled += 1;
    if (timer.state === 'skipped' && timer.stateReason !== null && CAP_REASONS.has(timer.stateReason)) entry(type).capped += 1;
  }
  return [...byType.values()].sort((a, b) => a.triggerType.localeCompare(b.triggerType));
}
