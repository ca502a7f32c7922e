import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';
import type { BaseCallbackHandler } from '@langchain/core/callbacks/base';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { Metrics } from '../../app/metrics.js';
import type { ChatModelResolver } from '../../app/ports.js';
import { ModelCallObserver, providerOf } from './model-call-observer.js';
import type { PrometheusMetrics } from './prometheus-metrics.js';

/**
 * The callbacks a model built by vigil's factory is constructed with: its calls, time, tokens
 * and errors, labelled with the spec's provider and model.
 */
export function modelCallObservers(metrics: Metrics): (spec: string) => BaseCallbackHandler[] {
  return (spec) => {
    const { provider, model } = providerOf(spec);
    return [new ModelCallObserver(metrics, provider, model)];
  };
}

/**
 * Each model of a resolver given from outside (tests' fake models) reports its calls (once
 * per model instance). Set on the instance: a model that copies itself from its constructor
 * fields (ChatOpenAI's bindTools) loses it, so the server's own factory takes
 * modelCallObservers at construction instead.
 */
export function observeModels(models: ChatModelResolver, metrics: Metrics): ChatModelResolver {
  const observed = new WeakSet<BaseChatModel>();
  return (spec) => {
    const model = models(spec);
    if (!observed.has(model)) {
      observed.add(model);
      const { provider, model: name } = providerOf(spec);
      const existing = Array.isArray(model.callbacks) ? model.callbacks : model.callbacks ? [model.callbacks] : [];
      model.callbacks = [...existing, new ModelCallObserver(metrics, provider, name)] as typeof model.callbacks;
    }
    return model;
  };
}

/**
 * The same saver, with the time of each write measured. A proxy rather than a subclass:
 * it works for whichever saver the storage built, and every other method is the saver's own.
 */
export function measureCheckpointWrites<T extends BaseCheckpointSaver>(saver: T, metrics: Metrics): T {
  countSerializedBytes(saver, metrics);
  return new Proxy(saver, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      if (property !== 'put') return value.bind(target);
      return async (...args: unknown[]) => {
        const started = performance.now();
        try {
          return await (value as (...inner: unknown[]) => Promise<unknown>).apply(target, args);
        } finally {
          metrics.checkpointWrite({ seconds: (performance.now() - started) / 1000 });
        }
      };
    },
  });
}

export interface MetricsServer {
  url: string;
  close(): Promise<void>;
}

/** `/metrics` alone on a port of its own (VIGIL_METRICS_PORT), for a scraper on a private network. */
export async function serveMetrics(metrics: PrometheusMetrics, host: string, port: number): Promise<MetricsServer> {
  const server = createServer((request, response) => {
    if (request.method !== 'GET' || (request.url ?? '').split('?')[0] !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    metrics.exposition().then(
      ({ contentType, body }) => response.writeHead(200, { 'content-type': contentType }).end(body),
      () => response.writeHead(500, { 'content-type': 'text/plain' }).end('metrics failed\n'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shown}:${address.port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * Bytes of checkpoint data serialised for writing (checkpoints, pending writes, the message
 * log): every write goes through the saver's serializer, so its output is what is stored.
 * The saver and its helpers share that one serializer object, so wrapping its method counts
 * all of them, whichever backend.
 */
function countSerializedBytes(saver: BaseCheckpointSaver, metrics: Metrics): void {
  const serde = saver.serde;
  const dumps = serde.dumpsTyped.bind(serde);
  serde.dumpsTyped = async (value: unknown) => {
    const [type, bytes] = await dumps(value);
    metrics.checkpointWrite({ seconds: 0, bytes: bytes.byteLength, countWrite: false });
    return [type, bytes];
  };
}
