import { loadConfig } from '../../src/config.js';
import { startServer, type RunningServer, type StartOptions } from '../../src/main.js';
import { captureLogs, type LogLine } from './log-capture.js';
import { makeTempDir, removeTempDir } from './temp-dir.js';
import { dropSchema, randomSchemaName } from './postgres.js';

export type Backend = { kind: 'sqlite' } | { kind: 'postgres'; url: string };

export interface UndocumentedResponse {
  operation: string;
  status: number;
  documented: number[];
}

export interface TestServer extends RunningServer {
  logs: LogLine[];
  /** Responses whose status the API document does not declare for their route (should stay empty). */
  undocumented: UndocumentedResponse[];
  /** The same lines as written, for what parsing hides (a key written twice). */
  rawLogs: string[];
  /** Start a fresh server process-equivalent on the same database (a restart). */
  restart(): Promise<TestServer>;
  /** Close and remove the database. */
  destroy(): Promise<void>;
  request(method: string, path: string, options?: { body?: unknown; token?: string; headers?: Record<string, string>; rawBody?: string }): Promise<{ status: number; body: any; headers: Headers; text: string }>;
}

export const ALICE = { id: 'alice', token: 'alice-token-0123456789' };
export const BOB = { id: 'bob', token: 'bob-token-0123456789ab' };

interface Place {
  dataDir: string;
  schema: string;
}

/** startTestServer's options for a server whose model is a ScriptedOpenAiServer (openai-server.ts), retrying no failed call. */
export function scriptedModelOptions(model: { baseUrl: string }): { environment: Record<string, string>; autonomy: { modelRetries: number } } {
  return { environment: { VIGIL_MODEL: 'openai:scripted', OPENAI_BASE_URL: model.baseUrl }, autonomy: { modelRetries: 0 } };
}

/** A real server on a loopback port, over a real database, with captured logs. */
export async function startTestServer(
  backend: Backend,
  options: StartOptions & { environment?: Record<string, string>; place?: Place } = {},
): Promise<TestServer> {
  const place = options.place ?? { dataDir: await makeTempDir(), schema: randomSchemaName() };
  const capture = captureLogs('debug');
  const environment: Record<string, string> = {
    VIGIL_PORT: '0',
    VIGIL_DATA_DIR: place.dataDir,
    VIGIL_AUTH_TOKENS: `${ALICE.id}:${ALICE.token},${BOB.id}:${BOB.token}`,
    VIGIL_LOG_LEVEL: 'debug',
    // Tests stop servers at once (runs in flight are cancelled); the grace period has its own e2e test.
    VIGIL_SHUTDOWN_TIMEOUT_MS: '0',
    ...(backend.kind === 'postgres' ? { DATABASE_URL: backend.url, VIGIL_DATABASE_SCHEMA: place.schema } : {}),
    ...options.environment,
  };
  const config = loadConfig(environment);
  const { environment: _environment, place: _place, ...startOptions } = options;
  const undocumented: UndocumentedResponse[] = [];
  const server = await startServer(config, { logger: capture.logger, withLogContext: capture.withLogContext, onUndocumentedResponse: (violation) => undocumented.push(violation), ...startOptions });
  const request: TestServer['request'] = async (method, path, requestOptions = {}) => {
    const headers: Record<string, string> = { ...requestOptions.headers };
    const token = requestOptions.token ?? ALICE.token;
    if (token) headers.authorization = `Bearer ${token}`;
    let body: string | undefined = requestOptions.rawBody;
    if (requestOptions.body !== undefined) {
      body = JSON.stringify(requestOptions.body);
      headers['content-type'] ??= 'application/json';
    }
    const response = await fetch(`${server.url}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
    const text = await response.text();
    let parsed: unknown = undefined;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: response.status, body: parsed as any, headers: response.headers, text };
  };
  const testServer: TestServer = {
    ...server,
    logs: capture.lines,
    undocumented,
    rawLogs: capture.raw,
    request,
    restart: async () => {
      await server.close();
      return startTestServer(backend, { ...options, place });
    },
    destroy: async () => {
      await server.close();
      // Every suite doubles as a check of the API document: no status it does not declare.
      if (undocumented.length > 0) throw new Error(`responses the API document does not declare: ${JSON.stringify(undocumented)}`);
      await removeTempDir(place.dataDir);
      if (backend.kind === 'postgres') await dropSchema(place.schema, backend.url);
    },
  };
  return testServer;
}

/** Parse a server-sent-events body into its events. */
export function parseSse(text: string): Array<{ event: string; data: any }> {
  return text
    .split('\n\n')
    .filter((block) => block.trim())
    .map((block) => {
      const event = /^event: (.*)$/m.exec(block)?.[1] ?? '';
      const data = /^data: (.*)$/m.exec(block)?.[1] ?? 'null';
      return { event, data: JSON.parse(data) };
    });
}
