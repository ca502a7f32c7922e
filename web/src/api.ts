/**
 * The app's only door to the server: the public REST API and the WebSocket. Types come
 * from the server's own zod schemas (type-only imports, erased from the bundle), so a
 * change on the server that breaks the app breaks its type check.
 */
import type { z } from 'zod';
import type { agentDto, messageDto, runDto, threadDto, memoryDto, errorBody } from '../../src/http/schemas.js';
import type { timerDto, threadAutonomyDto } from '../../src/http/routes/autonomy-routes.js';
import type { scheduleDto, fireDto } from '../../src/http/routes/schedule-routes.js';
import type { hookDeliveryDto, hookDto } from '../../src/http/routes/hook-routes.js';
import type { approvalDto } from '../../src/http/routes/approval-routes.js';
import type { threadContextDto } from '../../src/http/schemas.js';
import type { ApprovalDecisionBody } from '../../src/domain/tools/approval.js';
import type { planDto, toolCallDto, toolDto } from '../../src/http/routes/plan-routes.js';
import type { PlannerSettings } from '../../src/domain/planner/planner-settings.js';
import type { AutonomyPolicy, AutonomyPolicyInput } from '../../src/domain/autonomy/autonomy-policy.js';
import type { VigilEvent } from '../../src/domain/events.js';

export type Agent = z.infer<typeof agentDto>;
export type Thread = z.infer<typeof threadDto>;
export type Message = z.infer<typeof messageDto>;
export type Run = z.infer<typeof runDto>;
export type Memory = z.infer<typeof memoryDto>;
export type Timer = z.infer<typeof timerDto>;
export type ThreadAutonomy = z.infer<typeof threadAutonomyDto>;
export type Schedule = z.infer<typeof scheduleDto>;
export type Fire = z.infer<typeof fireDto>;
export type Hook = z.infer<typeof hookDto>;
export type CreatedHook = Hook & { secret: string };
export type HookDelivery = z.infer<typeof hookDeliveryDto>;
export type Approval = z.infer<typeof approvalDto>;
export type ThreadContext = z.infer<typeof threadContextDto>;
export type { ApprovalDecisionBody };
export type Plan = z.infer<typeof planDto>;
export type ToolCall = z.infer<typeof toolCallDto>;
/** A plan with its latest tool calls (GET /api/plans/:planId): older ones are a toolCallsCursor away. */
export type PlanDetail = Plan & { toolCalls: ToolCall[]; toolCallsNextCursor: string | null };
export type Tool = z.infer<typeof toolDto>;
export type AgentTools = { tools: Tool[]; unavailable: Array<{ server: string; error: string }> };
export type { PlannerSettings };
export type ErrorBody = z.infer<typeof errorBody>;
export type { AutonomyPolicy, AutonomyPolicyInput, VigilEvent };

const TOKEN_KEY = 'vigil.token';

export function storedToken(): string | null {
  return localStorage.getItem(TOKEN_KEY);
}

export function storeToken(token: string | null): void {
  if (token) localStorage.setItem(TOKEN_KEY, token);
  else localStorage.removeItem(TOKEN_KEY);
}

/** A refused request: the server's stable code, its message, and per-field issues. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Array<{ path: string; message: string }> = [],
  ) {
    super(message);
  }

  /** The issue for one field (path "/name", "/autonomy/maxPerDay", …). */
  fieldError(path: string): string | undefined {
    return this.details.find((detail) => detail.path === path || detail.path.startsWith(`${path}/`))?.message;
  }
}

const unauthorizedListeners = new Set<() => void>();

/** Told of every 401 from the API: the token is gone or no longer accepted. */
export function onUnauthorized(listener: () => void): () => void {
  unauthorizedListeners.add(listener);
  return () => unauthorizedListeners.delete(listener);
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = {};
  const token = storedToken();
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(path, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  if (response.status === 204) return undefined as T;
  if (response.status === 401) for (const listener of unauthorizedListeners) listener();
  const parsed = (await response.json().catch(() => null)) as unknown;
  if (!response.ok) {
    const error = (parsed as ErrorBody | null)?.error;
    const details = Array.isArray(error?.details) ? (error.details as Array<{ path: string; message: string }>) : [];
    throw new ApiError(response.status, error?.code ?? 'HTTP_ERROR', error?.message ?? `HTTP ${response.status}`, details);
  }
  return parsed as T;
}

/**
 * A fresh id for a request the server echoes (a message.send's `requestId`). Not
 * crypto.randomUUID: it exists only in a secure context, and the app may be served over
 * plain http on a local network.
 */
export function newRequestId(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (byte) => byte.toString(16).padStart(2, '0')).join('');
}

export type ClientFrame =
  | { type: 'thread.subscribe'; threadId: string; afterEventId?: number }
  | { type: 'thread.unsubscribe'; threadId: string }
  | { type: 'message.send'; threadId: string; content: string; requestId?: string }
  | { type: 'run.cancel'; runId: string };

/**
 * One WebSocket for the app, reconnecting; subscriptions are replayed on reconnect so an
 * open thread keeps receiving autonomous replies. Each resumes after the last event it
 * delivered (the server replays what was missed within its window, I15), and views are
 * told of the reconnect so they can reload what may lie beyond the window.
 */
export class LiveConnection {
  private socket: WebSocket | undefined;
  private readonly subscribed = new Set<string>();
  /** Per subscribed thread, the id of the last event delivered: where a reconnect resumes. */
  private readonly lastEventIds = new Map<string, number>();
  /**
   * Per thread subscribed with `subscribe(threadId, isNew)`: where its replay becomes new to
   * the view. The replay window's older events (what the view's history already holds) are
   * passed over until the first that `isNew` accepts.
   */
  private readonly replayFrom = new Map<string, (event: VigilEvent) => boolean>();
  private readonly listeners = new Set<(event: VigilEvent) => void>();
  private readonly reconnectListeners = new Set<() => void>();
  private readonly statusListeners = new Set<(online: boolean) => void>();
  private closed = false;
  private connectedBefore = false;
  /** False from the moment the socket is lost until it is open again (true while the first one opens). */
  private online = true;
  private queue: ClientFrame[] = [];

  connect(): void {
    const token = storedToken();
    const url = new URL('/api/ws', location.href);
    url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
    if (token) url.searchParams.set('token', token);
    const socket = new WebSocket(url);
    this.socket = socket;
    socket.onopen = () => {
      for (const threadId of this.subscribed) {
        const afterEventId = this.lastEventIds.get(threadId);
        socket.send(JSON.stringify({ type: 'thread.subscribe', threadId, ...(afterEventId !== undefined ? { afterEventId } : {}) }));
      }
      for (const frame of this.queue) socket.send(JSON.stringify(frame));
      this.queue = [];
      this.setOnline(true);
      if (this.connectedBefore) for (const listener of this.reconnectListeners) listener();
      this.connectedBefore = true;
    };
    socket.onmessage = (message) => {
      const event = JSON.parse(String(message.data)) as VigilEvent & { eventId?: number };
      if ('threadId' in event && typeof event.threadId === 'string' && typeof event.eventId === 'number' && this.subscribed.has(event.threadId)) {
        this.lastEventIds.set(event.threadId, event.eventId);
        const isNew = this.replayFrom.get(event.threadId);
        if (isNew) {
          if (!isNew(event)) return; // older than the view: its history has it
          this.replayFrom.delete(event.threadId);
        }
      }
      for (const listener of this.listeners) listener(event);
    };
    socket.onclose = () => {
      if (this.closed) return;
      this.setOnline(false);
      setTimeout(() => this.connect(), 1000);
    };
  }

  close(): void {
    this.closed = true;
    this.socket?.close();
  }

  on(listener: (event: VigilEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Whether the socket is up (or still opening for the first time); false while it is lost and being reconnected. */
  get isOnline(): boolean {
    return this.online;
  }

  /** Told when the socket is lost (false) and when it is back (true). */
  onStatus(listener: (online: boolean) => void): () => void {
    this.statusListeners.add(listener);
    return () => this.statusListeners.delete(listener);
  }

  private setOnline(online: boolean): void {
    if (this.online === online) return;
    this.online = online;
    for (const listener of this.statusListeners) listener(online);
  }

  /** Called after the socket came back (not on the first connect). */
  onReconnect(listener: () => void): () => void {
    this.reconnectListeners.add(listener);
    return () => this.reconnectListeners.delete(listener);
  }

  /**
   * Subscribe to a thread. With `isNew`, the thread's events still in the server's replay
   * window come first, from the first one `isNew` accepts (the window is in order): a view
   * opened while a reply streams (a reload, a thread reopened) gets the reply from its
   * start, and nothing its history already shows. Without it, live events only.
   */
  subscribe(threadId: string, isNew?: (event: VigilEvent) => boolean): void {
    if (isNew) {
      this.replayFrom.set(threadId, isNew);
      this.lastEventIds.set(threadId, 0);
    }
    this.send({ type: 'thread.subscribe', threadId, ...(isNew ? { afterEventId: 0 } : {}) });
  }

  send(frame: ClientFrame): void {
    if (frame.type === 'thread.subscribe') this.subscribed.add(frame.threadId);
    if (frame.type === 'thread.unsubscribe') {
      this.subscribed.delete(frame.threadId);
      this.lastEventIds.delete(frame.threadId);
      this.replayFrom.delete(frame.threadId);
    }
    if (this.socket?.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(frame));
    else if (frame.type !== 'thread.subscribe') this.queue.push(frame); // subscriptions replay on open
  }

  /** Whether a frame is waiting for the socket to be back (it has not gone out). */
  isWaiting(frame: ClientFrame): boolean {
    return this.queue.includes(frame);
  }

  /** Take back a frame still waiting for the socket (true), or say it has gone out already (false). */
  unsend(frame: ClientFrame): boolean {
    const index = this.queue.indexOf(frame);
    if (index < 0) return false;
    this.queue.splice(index, 1);
    return true;
  }
}
