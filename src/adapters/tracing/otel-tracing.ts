import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import type { Tracer } from '@opentelemetry/api';

export interface OtelTracing {
  tracer: Tracer;
  /** Export what is buffered and stop (on server close). */
  shutdown(): Promise<void>;
}

/**
 * OpenTelemetry traces over OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT, with the official SDK.
 * The provider is this server's own, never registered as the process-wide global: two
 * servers in one process (tests) keep their traces apart, and nothing happens at import.
 */
export function startOtelTracing(options: { endpoint: string; serviceName: string; serviceVersion: string; headers?: Record<string, string> }): OtelTracing {
  const exporter = new OTLPTraceExporter({ url: `${options.endpoint.replace(/\/+$/, '')}/v1/traces`, ...(options.headers ? { headers: options.headers } : {}) });
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': options.serviceName, 'service.version': options.serviceVersion }),
    spanProcessors: [new BatchSpanProcessor({ exporter, scheduledDelayMillis: 1_000 })],
  });
  return {
    tracer: provider.getTracer('vigil', options.serviceVersion),
    shutdown: () => provider.shutdown(),
  };
}
