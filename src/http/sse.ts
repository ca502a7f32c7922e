import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { VigilError } from '../domain/errors.js';
import type { VigilEvent } from '../domain/events.js';
import type { RunOutcome } from '../app/run-coordinator.js';
import type { HttpDependencies } from './http-dependencies.js';
import { toVigilError } from './errors.js';
import { toMessageDto, toRunDto } from './schemas.js';

export function wantsEventStream(request: FastifyRequest): boolean {
  return (request.headers.accept ?? '').includes('text/event-stream');
}

/**
 * Take a response over as a server-sent event stream: the stream's headers (after any
 * `headers` the caller adds), and the active-streams metric until the connection closes.
 * Every SSE route opens its stream here.
 */
export function openEventStream(request: FastifyRequest, reply: FastifyReply, options: { metrics?: HttpDependencies['metrics']; headers?: Record<string, string> } = {}): FastifyReply['raw'] {
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, {
    ...options.headers,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    'x-request-id': request.id,
  });
  const streamClosed = options.metrics?.streamOpened('sse');
  raw.on('close', () => streamClosed?.());
  return raw;
}

/** An event id a client resumes after (Last-Event-ID, ?after=): a non-negative integer. */
export const eventIdSchema = z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

/** The request's Last-Event-ID: undefined when absent or empty, VALIDATION_FAILED when it is not an event id. */
export function lastEventIdOf(request: FastifyRequest): number | undefined {
  const header = request.headers['last-event-id'];
  if (typeof header !== 'string' || header === '') return undefined;
  const parsed = eventIdSchema.safeParse(header);
  if (!parsed.success) throw new VigilError('VALIDATION_FAILED', 'Last-Event-ID must be an event id (a non-negative integer)');
  return parsed.data;
}

/**
 * What a connection may hold unsent (bytes) before it is dropped: a client that stops
 * reading would otherwise make the server keep every later event in memory. Dropped, a
 * thread's stream is resumed from the replay window on reconnect (Last-Event-ID,
 * afterEventId), and a run's outcome is in history.
 */
export const MAX_UNSENT_BYTES = 4 * 1024 * 1024;

/** Write `chunk` unless the stream is closed or its client is too far behind (then it is dropped). */
export function writeOrDrop(raw: FastifyReply['raw'], chunk: string): void {
  if (raw.writableEnded || raw.destroyed) return;
  if (raw.writableLength > MAX_UNSENT_BYTES) raw.destroy();
  else raw.write(chunk);
}

/**
 * Stream one run's events as server-sent events, ending after `run.end`. The run is not
 * tied to the connection: if the client goes away the run still finishes and its reply
 * is saved, visible in history.
 */
export async function streamRunAsSse(
  deps: HttpDependencies,
  request: FastifyRequest,
  reply: FastifyReply,
  target: { threadId: string; runId: string },
  start: () => Promise<unknown>,
): Promise<void> {
  const raw = openEventStream(request, reply, { metrics: deps.metrics });
  let open = true;
  raw.on('close', () => {
    open = false;
  });
  const write = (event: VigilEvent) => {
    if (open) writeOrDrop(raw, `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
  };
  let ended!: () => void;
  const runEnded = new Promise<void>((resolve) => {
    ended = resolve;
  });
  const unsubscribe = deps.events.subscribe(target.threadId, (event) => {
    if (!('runId' in event) || event.runId !== target.runId) return;
    write(event);
    if (event.type === 'run.end') ended();
  });
  try {
    await start();
    await runEnded;
  } catch (error) {
    // The run never started (e.g. it could not be recorded): say so, then end the stream.
    const vigilError = toVigilError(error);
    request.log.error({ err: error }, 'run could not start');
    write({ type: 'error', threadId: target.threadId, runId: target.runId, at: new Date().toISOString(), code: vigilError.code, message: vigilError.message });
  } finally {
    unsubscribe();
    if (open) raw.end();
  }
}

/**
 * Answer a request that starts a run: as server-sent events when the client accepts
 * them, else as JSON once the run ends (the run and the messages a person may see).
 */
export async function answerRun(
  deps: HttpDependencies,
  request: FastifyRequest,
  reply: FastifyReply,
  target: { threadId: string; runId: string },
  start: () => Promise<RunOutcome>,
) {
  if (wantsEventStream(request)) return streamRunAsSse(deps, request, reply, target, start);
  const outcome = await start();
  return {
    run: toRunDto(outcome.run),
    messages: outcome.messages.filter((message) => message.visibility === 'user').map((message) => toMessageDto(message, false)),
  };
}
