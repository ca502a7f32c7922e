import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A scripted OpenAI-compatible model server on loopback, for tests of everything a model
 * provider can do to vigil: POST /v1/chat/completions, streamed (SSE `data:` chunks and
 * `[DONE]`) or not, answering from a per-test script — text, tool calls, an error status
 * with headers, a hang, a stream cut or stalled after N chunks, a fixed completion id —
 * and recording every request body, so a test can assert exactly what the model received.
 *
 * Point a real ChatOpenAI at it through vigil's model factory: model `openai:<name>` and
 * `OPENAI_BASE_URL` = `server.baseUrl` (or `createModelFactory({ openaiBaseUrl })`).
 * Never the network.
 */

export interface ScriptedToolCall {
  /** The provider's tool-call id; one is made up when absent. */
  id?: string;
  name: string;
  /** Arguments: an object (sent as JSON) or a raw string (sent as is, e.g. invalid JSON). */
  arguments: unknown;
}

/** One response of the server. Fields combine: e.g. `text` + `id` + `stallAfterChunks`. */
export interface ScriptedResponse {
  /** The reply's text; streamed in word-sized chunks unless `chunks` is given. */
  text?: string;
  /** The exact content chunks to stream (joined for a non-streamed answer). */
  chunks?: string[];
  toolCalls?: ScriptedToolCall[];
  /** The completion id (`chatcmpl-…`); a fresh one per response when absent. */
  id?: string;
  /** The model name the server reports; the requested one when absent. */
  model?: string;
  /** Answer with this HTTP status and an OpenAI-style error body instead of a completion. */
  status?: number;
  /** Response headers (e.g. `retry-after` on a 429). */
  headers?: Record<string, string>;
  /** The error message of an error status. */
  errorMessage?: string;
  /** Accept the request and never answer (until the client gives up or the server closes). */
  hang?: boolean;
  /** Streamed: send this many content chunks, then destroy the connection (no `[DONE]`). */
  cutAfterChunks?: number;
  /** Streamed: send this many content chunks, then stay silent until the client gives up. */
  stallAfterChunks?: number;
  /** Streamed: a pause between chunks, for a test that must act mid-stream (never a timing assertion). */
  chunkDelayMs?: number;
  /** Token usage to report (defaults to small made-up numbers). */
  usage?: { prompt_tokens: number; completion_tokens: number };
}

export interface RecordedRequest {
  /** 0-based order of arrival. */
  index: number;
  /** When it arrived (Date.now()), to check a wait the script asked for (retry-after). */
  receivedAt: number;
  path: string;
  headers: IncomingMessage['headers'];
  /** The parsed JSON body: `model`, `messages`, `stream`, `tools`, … */
  body: Record<string, any>;
  /** The messages as sent (role, content, tool_calls, …). */
  messages: Array<Record<string, any>>;
  stream: boolean;
  /** True when the client went away before the response was complete (a timeout, a cancel). */
  aborted: boolean;
  /** The response this request got. */
  response: ScriptedResponse;
}

export type Responder = (request: RecordedRequest) => ScriptedResponse;

export interface OpenAiServerOptions {
  /** The response when the script is empty; `{ text: 'ok' }` by default. */
  fallback?: Responder;
  /** One completion id for every response (as some local servers do). */
  completionId?: string;
}

export class ScriptedOpenAiServer {
  readonly requests: RecordedRequest[] = [];
  private readonly queue: Array<ScriptedResponse | Responder> = [];
  private readonly server: Server;
  private readonly open = new Set<ServerResponse>();
  private port = 0;
  private fallback: Responder;

  private constructor(private readonly options: OpenAiServerOptions) {
    this.fallback = options.fallback ?? (() => ({ text: 'ok' }));
    this.server = createServer((request, response) => void this.handle(request, response));
  }

  static async start(options: OpenAiServerOptions = {}): Promise<ScriptedOpenAiServer> {
    const fake = new ScriptedOpenAiServer(options);
    await new Promise<void>((resolve) => fake.server.listen(0, '127.0.0.1', resolve));
    fake.port = (fake.server.address() as AddressInfo).port;
    return fake;
  }

  /** For OPENAI_BASE_URL / ChatOpenAI's `configuration.baseURL`. */
  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}/v1`;
  }

  /** Queue responses, answered in order, one per request; each may be a function of the request. */
  script(...responses: Array<ScriptedResponse | Responder>): this {
    this.queue.push(...responses);
    return this;
  }

  /** The response for requests when the queue is empty. */
  respondWith(responder: Responder): this {
    this.fallback = responder;
    return this;
  }

  /** Forget the recorded requests and the queued script (between tests sharing a server). */
  reset(): void {
    this.requests.length = 0;
    this.queue.length = 0;
    this.fallback = this.options.fallback ?? (() => ({ text: 'ok' }));
  }

  lastRequest(): RecordedRequest {
    const last = this.requests.at(-1);
    if (!last) throw new Error('the scripted model server has received no request');
    return last;
  }

  /** Requests whose messages contain `text` anywhere (to tell the calls of one test apart). */
  requestsMentioning(text: string): RecordedRequest[] {
    return this.requests.filter((request) => JSON.stringify(request.messages).includes(text));
  }

  async close(): Promise<void> {
    for (const response of this.open) response.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const raw = await readBody(request);
    const path = request.url?.split('?')[0] ?? '';
    if (request.method !== 'POST' || !path.endsWith('/chat/completions')) return sendJson(response, 404, { error: { message: `no route ${request.method} ${path}`, type: 'invalid_request_error' } });
    let body: Record<string, any>;
    try {
      body = JSON.parse(raw) as Record<string, any>;
    } catch {
      return sendJson(response, 400, { error: { message: 'the body is not JSON', type: 'invalid_request_error' } });
    }
    const recorded: RecordedRequest = {
      index: this.requests.length,
      receivedAt: Date.now(),
      path,
      headers: request.headers,
      body,
      messages: Array.isArray(body.messages) ? body.messages : [],
      stream: body.stream === true,
      aborted: false,
      response: {},
    };
    this.requests.push(recorded);
    const next = this.queue.shift() ?? this.fallback;
    const scripted = typeof next === 'function' ? next(recorded) : next;
    recorded.response = scripted;

    this.open.add(response);
    response.on('close', () => {
      this.open.delete(response);
      if (!response.writableFinished) recorded.aborted = true;
    });
    if (scripted.hang) return; // never answered: the client's timeout or abort ends it
    if (scripted.status !== undefined && scripted.status >= 400) {
      return sendJson(response, scripted.status, { error: { message: scripted.errorMessage ?? `scripted status ${scripted.status}`, type: 'server_error', code: null } }, scripted.headers);
    }
    const id = scripted.id ?? this.options.completionId ?? `chatcmpl-${randomUUID()}`;
    const model = scripted.model ?? String(body.model ?? 'scripted');
    if (recorded.stream) await this.stream(response, scripted, id, model, body);
    else sendJson(response, 200, completion(scripted, id, model), scripted.headers);
  }

  private async stream(response: ServerResponse, scripted: ScriptedResponse, id: string, model: string, body: Record<string, any>): Promise<void> {
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', ...scripted.headers });
    const created = Math.floor(Date.now() / 1000);
    // Each chunk is flushed before the next step, so a cut or a stall comes after what was sent.
    const send = (delta: Record<string, unknown>, finishReason: string | null = null) =>
      new Promise<void>((resolve) => {
        if (response.destroyed) return resolve();
        response.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finishReason, logprobs: null }] })}\n\n`, () => resolve());
      });
    const pieces = contentChunks(scripted);
    await send({ role: 'assistant', content: '' });
    for (let index = 0; index < pieces.length; index++) {
      if (scripted.cutAfterChunks !== undefined && index >= scripted.cutAfterChunks) {
        response.destroy(); // mid-stream: no finish_reason, no [DONE]
        return;
      }
      if (scripted.stallAfterChunks !== undefined && index >= scripted.stallAfterChunks) return;
      if (index > 0 && scripted.chunkDelayMs) await pause(scripted.chunkDelayMs);
      if (response.destroyed) return;
      await send({ content: pieces[index] });
    }
    if (scripted.cutAfterChunks !== undefined && pieces.length <= scripted.cutAfterChunks) {
      response.destroy();
      return;
    }
    for (const [index, call] of (scripted.toolCalls ?? []).entries()) {
      await send({ tool_calls: [{ index, id: call.id ?? `call_${randomUUID().slice(0, 8)}`, type: 'function', function: { name: call.name, arguments: '' } }] });
      await send({ tool_calls: [{ index, function: { arguments: argumentsOf(call) } }] });
    }
    await send({}, scripted.toolCalls?.length ? 'tool_calls' : 'stop');
    if (body.stream_options?.include_usage) {
      response.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage: usageOf(scripted) })}\n\n`);
    }
    response.end('data: [DONE]\n\n');
  }
}

function completion(scripted: ScriptedResponse, id: string, model: string): Record<string, unknown> {
  const toolCalls = (scripted.toolCalls ?? []).map((call) => ({ id: call.id ?? `call_${randomUUID().slice(0, 8)}`, type: 'function', function: { name: call.name, arguments: argumentsOf(call) } }));
  return {
    id,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: contentChunks(scripted).join('') || (toolCalls.length ? null : ''), ...(toolCalls.length ? { tool_calls: toolCalls } : {}) },
        finish_reason: toolCalls.length ? 'tool_calls' : 'stop',
        logprobs: null,
      },
    ],
    usage: usageOf(scripted),
  };
}

function contentChunks(scripted: ScriptedResponse): string[] {
  if (scripted.chunks) return scripted.chunks;
  const text = scripted.text ?? (scripted.toolCalls?.length ? '' : 'ok');
  return text ? text.split(/(?<=\s)/) : [];
}

function argumentsOf(call: ScriptedToolCall): string {
  return typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {});
}

function usageOf(scripted: ScriptedResponse) {
  const usage = scripted.usage ?? { prompt_tokens: 10, completion_tokens: 5 };
  return { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens };
}

function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(JSON.stringify(body));
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

function pause(milliseconds: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, milliseconds));
}
