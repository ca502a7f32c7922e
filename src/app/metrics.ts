/**
 * What the application reports for operators (Prometheus at /metrics). A port, so app
 * code stays free of the metrics library; `noMetrics` serves tests and embedders.
 */
export interface Metrics {
  httpRequest(sample: { method: string; route: string; status: number; seconds: number }): void;
  runEnded(sample: { trigger: string; status: string; seconds: number }): void;
  modelCall(sample: { provider: string; model: string; outcome: 'ok' | 'error'; seconds: number; inputTokens?: number; outputTokens?: number }): void;
  /** An autonomy decision: `fired`, `scheduled`, or why a timer did not fire (`cap_per_silence`, `quiet_hours`, `budget`, …). */
  autonomyDecision(decision: string): void;
  /** How late a timer fired after its due time. */
  timerLag(seconds: number): void;
  /** A client stream opened; call the result when it closes. */
  streamOpened(kind: 'sse' | 'websocket'): () => void;
  /** A checkpoint write's time, and/or bytes serialised for writing (`countWrite: false`: bytes only). */
  checkpointWrite(sample: { seconds: number; bytes?: number; countWrite?: boolean }): void;
}

export const noMetrics: Metrics = {
  httpRequest: () => undefined,
  runEnded: () => undefined,
  modelCall: () => undefined,
  autonomyDecision: () => undefined,
  timerLag: () => undefined,
  streamOpened: () => () => undefined,
  checkpointWrite: () => undefined,
};
