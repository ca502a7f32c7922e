import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Metrics } from '../../app/metrics.js';
import type { QueueDepth } from '../../app/job-queue.js';

/**
 * Distinct (provider, model) label pairs kept; later ones are counted as model "other".
 * Why: an agent's model is written by its user (`openai:<any name>`), and every label value
 * is a series the registry holds for the process's life: without a bound, users could grow
 * the metrics (and every scrape) without end.
 */
export const MAX_MODEL_SERIES = 64;
export const OTHER_MODEL = 'other';

const SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/**
 * The Prometheus form of vigil's metrics, on a registry of its own (never prom-client's
 * global one: two servers in one process, as in tests, must not share counters).
 * Default Node metrics include event-loop lag (`nodejs_eventloop_lag_seconds`).
 */
export class PrometheusMetrics implements Metrics {
  readonly registry = new Registry();
  readonly #http: Histogram<'method' | 'route' | 'status'>;
  readonly #runs: Histogram<'trigger' | 'status'>;
  readonly #modelCalls: Histogram<'provider' | 'model' | 'outcome'>;
  readonly #modelTokens: Counter<'provider' | 'model' | 'direction'>;
  readonly #modelErrors: Counter<'provider' | 'model'>;
  readonly #modelSeries = new Set<string>();
  readonly #autonomy: Counter<'decision'>;
  readonly #timerLag: Histogram;
  readonly #streams: Gauge<'kind'>;
  readonly #checkpointWrites: Histogram;
  readonly #checkpointBytes: Counter;

  constructor(options: { queueDepth?: () => Promise<QueueDepth> } = {}) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: '' });
    this.#http = new Histogram({ name: 'vigil_http_request_duration_seconds', help: 'HTTP requests by route and status', labelNames: ['method', 'route', 'status'], buckets: SECONDS_BUCKETS, registers });
    this.#runs = new Histogram({ name: 'vigil_run_duration_seconds', help: 'Runs by trigger and outcome', labelNames: ['trigger', 'status'], buckets: SECONDS_BUCKETS, registers });
    this.#modelCalls = new Histogram({ name: 'vigil_model_call_duration_seconds', help: 'Model calls by provider, model and outcome', labelNames: ['provider', 'model', 'outcome'], buckets: SECONDS_BUCKETS, registers });
    this.#modelTokens = new Counter({ name: 'vigil_model_tokens_total', help: 'Tokens the providers reported, by direction (input, output)', labelNames: ['provider', 'model', 'direction'], registers });
    this.#modelErrors = new Counter({ name: 'vigil_model_errors_total', help: 'Model calls that failed', labelNames: ['provider', 'model'], registers });
    this.#autonomy = new Counter({ name: 'vigil_autonomy_decisions_total', help: 'Autonomy decisions: scheduled, fired, or why a timer did not fire', labelNames: ['decision'], registers });
    this.#timerLag = new Histogram({ name: 'vigil_timer_lag_seconds', help: 'How late timers fired after their due time', buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60], registers });
    this.#streams = new Gauge({ name: 'vigil_active_streams', help: 'Open client streams (SSE, WebSocket)', labelNames: ['kind'], registers });
    this.#checkpointWrites = new Histogram({ name: 'vigil_checkpoint_write_duration_seconds', help: 'Checkpoint writes', buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1], registers });
    this.#checkpointBytes = new Counter({ name: 'vigil_checkpoint_written_bytes_total', help: 'Bytes of checkpoint data written', registers });
    const depth = options.queueDepth;
    if (depth) {
      new Gauge({
        name: 'vigil_queue_depth',
        help: 'Jobs (timers, schedule fires, heartbeats) waiting: ready now, deferred, running',
        labelNames: ['state'],
        registers,
        async collect() {
          const current = await depth().catch(() => undefined);
          if (!current) return;
          for (const [state, count] of Object.entries(current)) this.set({ state }, count);
        },
      });
    }
  }

  httpRequest(sample: { method: string; route: string; status: number; seconds: number }): void {
    this.#http.observe({ method: sample.method, route: sample.route, status: String(sample.status) }, sample.seconds);
  }

  runEnded(sample: { trigger: string; status: string; seconds: number }): void {
    this.#runs.observe({ trigger: sample.trigger, status: sample.status }, sample.seconds);
  }

  modelCall(sample: { provider: string; model: string; outcome: 'ok' | 'error'; seconds: number; inputTokens?: number; outputTokens?: number }): void {
    const labels = { provider: sample.provider, model: this.#modelLabel(sample.provider, sample.model) };
    this.#modelCalls.observe({ ...labels, outcome: sample.outcome }, sample.seconds);
    if (sample.outcome === 'error') this.#modelErrors.inc(labels);
    if (sample.inputTokens) this.#modelTokens.inc({ ...labels, direction: 'input' }, sample.inputTokens);
    if (sample.outputTokens) this.#modelTokens.inc({ ...labels, direction: 'output' }, sample.outputTokens);
  }

  /** The model's own name while fewer than MAX_MODEL_SERIES pairs are kept, else OTHER_MODEL. */
  #modelLabel(provider: string, model: string): string {
    const key = JSON.stringify([provider, model]);
    if (this.#modelSeries.has(key)) return model;
    if (this.#modelSeries.size >= MAX_MODEL_SERIES) return OTHER_MODEL;
    this.#modelSeries.add(key);
    return model;
  }

  autonomyDecision(decision: string): void {
    this.#autonomy.inc({ decision });
  }

  timerLag(seconds: number): void {
    this.#timerLag.observe(Math.max(0, seconds));
  }

  streamOpened(kind: 'sse' | 'websocket'): () => void {
    this.#streams.inc({ kind });
    let open = true;
    return () => {
      if (!open) return;
      open = false;
      this.#streams.dec({ kind });
    };
  }

  checkpointWrite(sample: { seconds: number; bytes?: number; countWrite?: boolean }): void {
    if (sample.countWrite !== false) this.#checkpointWrites.observe(sample.seconds);
    if (sample.bytes) this.#checkpointBytes.inc(sample.bytes);
  }

  async exposition(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
