import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { WebSocket } from '@fastify/websocket';
import { z } from 'zod';
import { VigilError } from '../domain/errors.js';
import type { VigilEvent } from '../domain/events.js';
import type { SendOptions } from '../app/conversation-service.js';
import type { HttpDependencies } from './http-dependencies.js';
import { toVigilError } from './errors.js';
import { MESSAGE_MAX_JSON_BYTES } from './limits.js';
import { refuseNul } from './nul-characters.js';
import { ID_MAX_LENGTH, idParam, messageContentSchema } from './schemas.js';
import { MAX_UNSENT_BYTES } from './sse.js';

/** A client's name for its request: echoed on the request's acknowledgement and on its errors. */
const requestIdSchema = z.string().min(1).max(128).refine((id) => id.trim() !== '', 'a requestId may not be blank');

/** What a client may send over /api/ws; every frame is validated, unknown fields refused. */
export const clientFrameSchema = z.discriminatedUnion('type', [
  /** `afterEventId`: resume — the thread's events after that id (within the replay window) come first. */
  z.object({ type: z.literal('thread.subscribe'), threadId: idParam, afterEventId: z.number().int().min(0).optional() }).strict(),
  z.object({ type: z.literal('thread.unsubscribe'), threadId: idParam }).strict(),
  /** With a `requestId`: answered by `message.accepted` once accepted, and its errors carry the id. */
  z.object({ type: z.literal('message.send'), threadId: idParam, content: messageContentSchema, requestId: requestIdSchema.optional() }).strict(),
  z.object({ type: z.literal('run.cancel'), runId: idParam }).strict(),
]);
export type ClientFrame = z.infer<typeof clientFrameSchema>;

/**
 * Room for a frame's own fields around a message's content: type, threadId and requestId
 * (at most 128 characters each, 6 bytes a character escaped), their keys, some whitespace.
 */
const FRAME_ENVELOPE_BYTES = 4 * 1024;

/**
 * The largest frame read, in bytes (a larger one is refused with BODY_TOO_LARGE). Whatever
 * the HTTP route takes as a message (its body, up to VIGIL_BODY_LIMIT: several text blocks,
 * an inline image) fits as a frame's content, and so does a text as long as a message may
 * be however its characters are written (MESSAGE_MAX_JSON_BYTES, above the body limit
 * only when an operator set that below it), with room for the frame's own fields.
 */
export function maxFrameBytes(bodyLimit: number): number {
  return Math.max(bodyLimit, MESSAGE_MAX_JSON_BYTES) + FRAME_ENVELOPE_BYTES;
}

export function registerWebSocket(app: FastifyInstance, deps: HttpDependencies): void {
  const frameLimit = maxFrameBytes(deps.bodyLimit);
  app.get('/api/ws', { websocket: true, schema: { hide: true } }, (socket, request) => {
    new Connection(socket, request, deps, frameLimit).start();
  });
}

/** One client connection: its subscriptions and the frames it sends. */
class Connection {
  private readonly subscriptions = new Map<string, () => void>();
  /**
   * Per thread, a count of the client's subscribe and unsubscribe frames. Frames are
   * handled side by side (a message.send waits for its run), and a subscribe awaits the
   * ownership check: one that an unsubscribe (or the socket's close) overtook meanwhile
   * must not subscribe after it.
   */
  private readonly intents = new Map<string, number>();
  private closed = false;

  constructor(
    private readonly socket: WebSocket,
    private readonly request: FastifyRequest,
    private readonly deps: HttpDependencies,
    private readonly frameLimit: number,
  ) {}

  start(): void {
    const streamClosed = this.deps.metrics?.streamOpened('websocket');
    this.socket.on('message', (data, isBinary) => {
      void this.onFrame(data as Buffer, isBinary);
    });
    this.socket.on('close', () => {
      this.closed = true;
      streamClosed?.();
      for (const unsubscribe of this.subscriptions.values()) unsubscribe();
      this.subscriptions.clear();
    });
  }

  private get userId(): string {
    return this.request.userId;
  }

  private async onFrame(data: Buffer, isBinary: boolean): Promise<void> {
    let parsed: unknown;
    try {
      if (isBinary) throw new VigilError('VALIDATION_FAILED', 'frames must be text');
      if (data.byteLength > this.frameLimit) throw new VigilError('BODY_TOO_LARGE', `frames are limited to ${this.frameLimit} bytes`);
      try {
        parsed = JSON.parse(data.toString('utf8'));
      } catch (error) {
        throw new VigilError('MALFORMED_JSON', 'the frame is not valid JSON', { cause: error });
      }
      // As at the HTTP door (nul-characters.ts): PostgreSQL's text cannot hold it.
      refuseNul(parsed);
      const result = clientFrameSchema.safeParse(parsed);
      if (!result.success) {
        const details = result.error.issues.map((issue) => ({ path: `/${issue.path.join('/')}`, message: issue.message }));
        throw new VigilError('VALIDATION_FAILED', details.map((detail) => `${detail.path} ${detail.message}`).join('; '), { details });
      }
      await this.handle(result.data);
    } catch (error) {
      const vigilError = toVigilError(error);
      if (vigilError.status >= 500) this.request.log.error({ err: error }, 'websocket frame failed');
      this.send({ type: 'error', at: new Date().toISOString(), code: vigilError.code, message: vigilError.message, ...echoedIds(parsed) });
    }
  }

  private async handle(frame: ClientFrame): Promise<void> {
    switch (frame.type) {
      case 'thread.subscribe': {
        const intent = this.intend(frame.threadId);
        await this.deps.conversations.getThread(this.userId, frame.threadId); // I12: 404 for others' threads
        if (this.intents.get(frame.threadId) !== intent) return; // unsubscribed meanwhile
        this.subscribe(frame.threadId, frame.afterEventId);
        // Deleted while it was looked up (its thread.deleted came before the subscription): let go.
        if (!(await this.deps.conversations.ownsThread(this.userId, frame.threadId))) {
          this.unsubscribe(frame.threadId);
          throw new VigilError('THREAD_NOT_FOUND', `no thread "${frame.threadId}"`);
        }
        // The acknowledgement: a client (or a test) knows no later event can be missed.
        this.send({ type: 'thread.subscribed', threadId: frame.threadId, at: new Date().toISOString() });
        return;
      }
      case 'thread.unsubscribe':
        this.intend(frame.threadId);
        this.unsubscribe(frame.threadId);
        return;
      case 'message.send': {
        const { threadId, requestId } = frame;
        await this.deps.conversations.getThread(this.userId, threadId);
        this.subscribe(threadId); // the sender always sees its own run
        // A client that named its request learns it was accepted, with the run to follow and
        // the message's id, before the run's first event; one that did not, as before.
        const onAccepted: SendOptions['onAccepted'] =
          requestId === undefined ? undefined : ({ runId, messageId }) => this.send({ type: 'message.accepted', threadId, runId, messageId, requestId, at: new Date().toISOString() });
        await this.deps.conversations.sendMessage(this.userId, threadId, frame.content, { runId: randomUUID(), correlationId: requestId ?? this.request.id, onAccepted });
        return;
      }
      case 'run.cancel':
        await this.deps.conversations.cancelRun(this.userId, frame.runId);
        return;
    }
  }

  private intend(threadId: string): number {
    const intent = (this.intents.get(threadId) ?? 0) + 1;
    this.intents.set(threadId, intent);
    return intent;
  }

  private subscribe(threadId: string, afterEventId?: number): void {
    // Closed while the thread was looked up: the close already let go of what it had.
    if (this.closed || this.subscriptions.has(threadId)) return;
    this.subscriptions.set(
      threadId,
      this.deps.events.subscribe(
        threadId,
        (event, eventId) => {
          this.send(event, eventId);
          // The thread's last event: a thread made later with its id is not this one.
          if (event.type === 'thread.deleted') this.unsubscribe(threadId);
        },
        { afterEventId },
      ),
    );
  }

  private unsubscribe(threadId: string): void {
    this.subscriptions.get(threadId)?.();
    this.subscriptions.delete(threadId);
  }

  /**
   * Each thread event carries its `eventId` (I15): the id to resume after on a reconnect.
   * A client too far behind (MAX_UNSENT_BYTES unsent) is closed (1013: try again later)
   * and resumes with afterEventId, rather than the server keeping every event for it.
   */
  private send(event: VigilEvent, eventId?: number): void {
    if (this.socket.readyState !== this.socket.OPEN) return;
    if (this.socket.bufferedAmount > MAX_UNSENT_BYTES) {
      this.request.log.warn({ bufferedBytes: this.socket.bufferedAmount }, 'websocket client too far behind: closing it (it resumes with afterEventId)');
      this.socket.close(1013, 'too far behind: reconnect and resume with afterEventId');
      return;
    }
    this.socket.send(JSON.stringify(eventId === undefined ? event : { ...event, eventId }));
  }
}

/**
 * The ids an error echoes from the frame it answers, each when the frame has it and it reads
 * as one (also on a frame refused by validation), so a client can tell which request failed.
 */
function echoedIds(frame: unknown): { threadId?: string; requestId?: string } {
  const threadId = z.object({ threadId: z.string().max(ID_MAX_LENGTH) }).safeParse(frame);
  const requestId = z.object({ requestId: requestIdSchema }).safeParse(frame);
  return { ...(threadId.success ? { threadId: threadId.data.threadId } : {}), ...(requestId.success ? { requestId: requestId.data.requestId } : {}) };
}
