import type { FastifyReply, FastifyRequest } from 'fastify';
import type { StreamMode } from './protocol-schemas.js';
import { openEventStream } from '../sse.js';

/** One server-sent event of a run, numbered in the run's order; its number is its SSE `id:`. */
export interface Frame {
  id: number;
  event: string;
  data: unknown;
}

/**
 * Everything a run streamed, in order, for every mode at once: each client picks the
 * frames of its modes, and a reconnect with `Last-Event-ID: n` gets the frames after n —
 * none lost, none repeated. Kept for a while after the run ends (joins, reconnects).
 */
export class RunFrames {
  readonly frames: Frame[] = [];
  done = false;
  private waiters: Array<() => void> = [];

  /** `firstId`: the number of the first frame (0, unless these frames stand in for a stream a client already read part of). */
  constructor(readonly firstId = 0) {}

  push(event: string, data: unknown): void {
    if (this.done) return;
    this.frames.push({ id: this.firstId + this.frames.length, event, data });
    this.wake();
  }

  close(): void {
    this.done = true;
    this.wake();
  }

  /** Resolves at the next frame, at the end, or after `ms`. */
  changed(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.waiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) waiter();
  }
}

/** Which stream mode a frame belongs to; `metadata` and `error` go to every client. */
function modeOf(event: string): StreamMode | 'always' {
  if (event === 'messages') return 'messages-tuple';
  if (event.startsWith('messages/')) return 'messages';
  if (event === 'metadata' || event === 'error') return 'always';
  return event as StreamMode;
}

export function wantsFrame(frame: Frame, modes: ReadonlySet<StreamMode>): boolean {
  const mode = modeOf(frame.event);
  return mode === 'always' || modes.has(mode);
}

export interface StreamTarget {
  threadId: string;
  runId: string;
}

/**
 * Write a run's frames as server-sent events: `id:` on every event, a comment heartbeat
 * while nothing happens, `Location` for the SDK's reconnect (with `Last-Event-ID`), and
 * the end of the response when the run's frames end.
 */
export async function writeFrames(
  request: FastifyRequest,
  reply: FastifyReply,
  frames: RunFrames | undefined,
  options: { target: StreamTarget; modes: ReadonlySet<StreamMode>; after: number; heartbeatMs: number; onDisconnect?: () => void; extraHeaders?: Record<string, string> },
): Promise<void> {
  const path = `/threads/${encodeURIComponent(options.target.threadId)}/runs/${encodeURIComponent(options.target.runId)}`;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(reply.getHeaders())) if (typeof value === 'string') headers[name] = value;
  const raw = openEventStream(request, reply, { headers: { ...headers, ...options.extraHeaders, location: `${path}/stream`, 'content-location': path } });
  let open = true;
  raw.on('close', () => {
    if (open && frames && !frames.done) options.onDisconnect?.();
    open = false;
  });
  // A position in the list, from the client's Last-Event-ID and the number of the list's first frame.
  let next = Math.max(0, options.after + 1 - (frames?.firstId ?? 0));
  while (open && frames) {
    while (next < frames.frames.length) {
      const frame = frames.frames[next]!;
      next += 1;
      // A client that reads slowly is written to as fast as it reads: the frames wait in the run's list, not in the socket's buffer.
      if (wantsFrame(frame, options.modes) && !raw.write(`event: ${frame.event}\ndata: ${JSON.stringify(frame.data)}\nid: ${frame.id}\n\n`)) await drainedOrClosed(raw);
      if (!open) break;
    }
    if (frames.done) break;
    const before = frames.frames.length;
    await frames.changed(options.heartbeatMs);
    if (open && frames.frames.length === before && !frames.done) raw.write(': heartbeat\n\n');
  }
  open = false;
  raw.end();
}

function drainedOrClosed(raw: FastifyReply['raw']): Promise<void> {
  return new Promise((resolve) => {
    if (raw.destroyed || raw.writableEnded) return resolve();
    const done = () => {
      raw.off('drain', done);
      raw.off('close', done);
      resolve();
    };
    raw.on('drain', done);
    raw.on('close', done);
  });
}
