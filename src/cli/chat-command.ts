import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import { vigilEventSchema, type VigilEvent } from '../domain/events.js';
import type { RunTrigger } from '../domain/run-context.js';
import { describeTrigger } from '../domain/trigger-description.js';
import { loadListenAddress } from '../config.js';

export interface ChatOptions {
  url: string;
  token?: string | undefined;
  agent?: string | undefined;
  thread?: string | undefined;
  input: NodeJS.ReadableStream;
  /** The conversation. */
  output: NodeJS.WritableStream;
  /** What went wrong (a refused request, an unreachable server). */
  errorOutput: NodeJS.WritableStream;
  /** Waits before each attempt to reconnect a lost connection (default about 10 s in all); then it gives up. */
  reconnectDelaysMs?: readonly number[];
}

/** A message typed: sent (with its request id) once the one before it has started its run. */
interface Message {
  requestId: string;
  text: string;
  sent: boolean;
  runId?: string;
  /** Sent as the connection dropped, and the server had no run for it after the reconnect. */
  unconfirmed: boolean;
}

/** The server could not be reached at all (as opposed to a server that answered with an error). */
class ConnectionError extends Error {}

const threadSchema = z.object({ id: z.string(), agentId: z.string(), title: z.string().nullable() }).passthrough();
const runSchema = z
  .object({
    id: z.string(),
    meta: z.record(z.string(), z.unknown()),
    correlationId: z.string(),
    status: z.string(),
    reason: z.string().nullable(),
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
  })
  .passthrough();
const historySchema = z.object({ messages: z.array(z.object({ role: z.string(), content: z.unknown(), runId: z.string().nullable().optional() }).passthrough()) }).passthrough();
/** A thread event's id on a WebSocket frame: a new connection resumes after the last one seen. */
const eventIdSchema = z.object({ eventId: z.number().int().min(0) });

/**
 * `vigil chat`: a terminal conversation over the public API (REST + WebSocket), so it
 * sees what any client sees: replies stream token by token, and a reply the agent sends
 * on its own (a follow-up, a schedule, a webhook) arrives while the prompt waits, marked
 * with why. Returns the exit code.
 */
export async function chat(options: ChatOptions): Promise<number> {
  const out = (text: string) => options.output.write(text);
  const fail = (text: string) => options.errorOutput.write(`vigil chat: ${text}\n`);
  // An empty id (an unset shell variable, say) is a mistake, not a wish for a new thread.
  for (const [flag, value] of [['--thread', options.thread], ['--agent', options.agent]] as const) {
    if (value !== undefined && value.trim() === '') {
      fail(`${flag} needs an id; it was given an empty one`);
      return 1;
    }
  }
  const base = serverBase(options.url);
  if (base === undefined) {
    fail(`invalid server URL "${options.url}" (--url or VIGIL_URL): expected one like http://127.0.0.1:8787`);
    return 1;
  }
  /** A failure, and for a server that could not be reached, where it was looked for. */
  const failWith = (error: unknown) => {
    fail(`${error instanceof Error ? error.message : String(error)}${error instanceof ConnectionError ? ` (is the server running at ${base}?)` : ''}`);
    return 1;
  };
  const api = async <T>(method: string, path: string, schema: z.ZodType<T>, body?: unknown): Promise<T> => {
    const headers: Record<string, string> = {};
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    try {
      response = await fetch(`${base}${path}`, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    } catch (error) {
      throw new ConnectionError(`cannot reach ${base}${causeCodeOf(error)}`);
    }
    const parsed: unknown = await response.json().catch(() => undefined);
    if (!response.ok) {
      const error = z.object({ error: z.object({ code: z.string(), message: z.string() }) }).safeParse(parsed);
      throw new Error(error.success ? `${error.data.error.code}: ${error.data.error.message}` : `HTTP ${response.status} from ${method} ${path}`);
    }
    return schema.parse(parsed);
  };

  // A new thread is made with the first message (leaving at once leaves no empty thread
  // behind); what it will need is checked now, so a wrong --agent or token fails at once.
  let thread: z.infer<typeof threadSchema> | undefined;
  try {
    if (options.thread) thread = await api('GET', `/api/threads/${encodeURIComponent(options.thread)}`, threadSchema);
    else if (options.agent) await api('GET', `/api/agents/${encodeURIComponent(options.agent)}`, z.unknown());
    else await api('GET', '/api/agents', z.unknown());
  } catch (error) {
    return failWith(error);
  }
  if (thread) out(`thread ${thread.id} with agent ${thread.agentId}. Type a message; /quit to leave.\n`);
  else out(`a new thread with ${options.agent ? `agent ${options.agent}` : 'your default agent'}, made when you send your first message. Type a message; /quit to leave.\n`);
  if (thread) {
    try {
      const history = await api('GET', `/api/threads/${encodeURIComponent(thread.id)}/history?limit=20`, historySchema);
      for (const message of history.messages) out(`${message.role === 'user' ? 'you' : 'agent'}> ${contentText(message.content)}\n`);
    } catch (error) {
      return failWith(error);
    }
  }

  const socketUrl = `${base.replace(/^http/, 'ws')}/api/ws${options.token ? `?token=${encodeURIComponent(options.token)}` : ''}`;
  const socketWhere = socketUrl.replace(/\?token=.*/, '');
  /** The open connection, if any. */
  let socket: WebSocket | undefined;
  /** Open, and subscribed to the thread (once there is one): messages may be sent. */
  let connected = false;
  /** Between a lost connection and a new one (or giving up). */
  let reconnecting = false;
  /** The thread's last event id seen: a new connection resumes after it (afterEventId). */
  let lastEventId: number | undefined;
  let leaving = false;
  let finish: (code: number) => void = () => undefined;
  const finished = new Promise<number>((resolve) => (finish = resolve));

  /** A new WebSocket, once open, with its events handled. */
  const connect = () =>
    new Promise<WebSocket>((resolve, reject) => {
      const candidate = new WebSocket(socketUrl);
      const refused = () => reject(new ConnectionError(`cannot open ${socketWhere}`));
      candidate.addEventListener('error', refused, { once: true });
      candidate.addEventListener(
        'open',
        () => {
          candidate.removeEventListener('error', refused);
          socket = candidate;
          candidate.addEventListener('message', (message) => receive(candidate, message));
          candidate.addEventListener('close', () => dropped(candidate), { once: true });
          resolve(candidate);
        },
        { once: true },
      );
    });
  /**
   * Subscribe to the thread (after `afterEventId`: the events missed since are replayed
   * first), and wait until no later event of it can be missed.
   */
  const subscribe = async (on: WebSocket, threadId: string, afterEventId?: number): Promise<void> => {
    const answered = nextEvent(on, (event) => (event.type === 'thread.subscribed' || event.type === 'error') && event.threadId === threadId);
    on.send(JSON.stringify({ type: 'thread.subscribe', threadId, ...(afterEventId !== undefined ? { afterEventId } : {}) }));
    const answer = await answered;
    if (answer === undefined) throw new ConnectionError(`connection to ${base} lost`);
    if (answer.type === 'error') throw new Error(`${answer.code}: ${answer.message}`);
  };
  /**
   * The thread of a new chat is made with its first message, and subscribed before the
   * message is sent: the run it starts, and all that comes later, is seen from its start.
   */
  const threadForMessage = async (on: WebSocket): Promise<string> => {
    if (!thread) {
      // Kept at once: if the connection drops before the subscription, the next one subscribes to it (no second thread).
      thread = await api('POST', '/api/threads', threadSchema, options.agent ? { agentId: options.agent } : {});
      out(`(thread ${thread.id} with agent ${thread.agentId})\n`);
      await subscribe(on, thread.id);
    }
    return thread.id;
  };

  const prompt = () => out('you> ');
  /** Runs whose tokens were printed, so their whole message is not printed again. */
  const streamed = new Set<string>();
  const openLine = new Set<string>();
  /** Runs whose end was learnt from the API after a reconnect: their events, if replayed later, are not shown again. */
  const settledRuns = new Set<string>();
  /**
   * Every message typed and not yet answered, oldest first. Each is sent with a request id
   * of its own, which its run carries as correlationId, so each run is matched to its
   * message. One is sent at a time, the next once the last one's run has started (the
   * server runs a thread's messages one after another anyway): an error the server answers
   * for the thread (a refused message.send starts no run) is then the sent one's.
   */
  const pending: Message[] = [];
  /** Messages the server refused (or that could not be sent): the exit code says so. */
  let undelivered = 0;
  /** The message sent whose run has not started yet, if any (not one sent as the connection dropped). */
  const unstarted = () => pending.find((entry) => entry.sent && entry.runId === undefined && !entry.unconfirmed);
  /** The message a person's run answers: the one with its correlationId (another client's run matches none). */
  const claimRun = async (runId: string) => {
    let correlationId: string | undefined;
    try {
      correlationId = (await api('GET', `/api/runs/${encodeURIComponent(runId)}`, runSchema)).correlationId;
    } catch {
      correlationId = undefined; // not found out: the message waiting for its run is the likeliest
    }
    const entry = correlationId === undefined ? unstarted() : pending.find((candidate) => candidate.requestId === correlationId);
    if (entry) {
      entry.runId = runId;
      entry.unconfirmed = false;
    }
  };
  const whyOf = async (runId: string, trigger: RunTrigger) => {
    try {
      const run = await api('GET', `/api/runs/${encodeURIComponent(runId)}`, runSchema);
      return describeTrigger(trigger, run.meta);
    } catch {
      return describeTrigger(trigger);
    }
  };

  // Events print in arrival order, one after another: the "why" of an autonomous run is
  // looked up before its tokens are printed, so it always comes first.
  let printing: Promise<void> = Promise.resolve();
  const receive = (from: WebSocket, message: MessageEvent) => {
    if (from !== socket) return;
    const raw = safeJson(String(message.data));
    const parsed = vigilEventSchema.safeParse(raw);
    if (!parsed.success) return;
    const event: VigilEvent = parsed.data;
    const eventId = eventIdSchema.safeParse(raw);
    if (eventId.success && thread && 'threadId' in event && event.threadId === thread.id) {
      if (lastEventId !== undefined && eventId.data.eventId <= lastEventId) return; // seen before the connection dropped
      lastEventId = eventId.data.eventId;
    }
    printing = printing.then(() => show(event)).catch(() => undefined);
  };
  /** How a run ended, when it did not simply succeed. */
  const showEnd = (runId: string, status: string, error: { code: string; message: string } | null | undefined, reason: string | null | undefined) => {
    if (status === 'failed') out(`\n[the run failed: ${error?.code ?? 'ERROR'}: ${error?.message ?? reason ?? ''}]`);
    if (status === 'cancelled') out(`\n[cancelled${reason ? `: ${reason}` : ''}]`);
    if (status === 'interrupted') out('\n[waiting for your approval of a tool call: GET /api/approvals]');
    if (openLine.delete(runId) || status !== 'succeeded') out('\n');
    streamed.delete(runId);
  };
  const show = async (event: VigilEvent): Promise<void> => {
    if ('threadId' in event && event.threadId !== undefined && event.threadId !== thread?.id) return;
    if ('runId' in event && event.runId !== undefined && settledRuns.has(event.runId)) return;
    switch (event.type) {
      case 'run.start':
        if (event.trigger === 'user') {
          await claimRun(event.runId);
          sendNext();
          out('agent> ');
          openLine.add(event.runId);
        } else {
          // A reply that arrives while the person is away, introduced with why it came.
          out(`\n[${await whyOf(event.runId, event.trigger)}]\nagent> `);
          openLine.add(event.runId);
        }
        return;
      case 'message.delta':
        streamed.add(event.runId);
        out(event.delta);
        return;
      case 'message.end':
        if (event.message.role === 'assistant' && !streamed.has(event.runId)) out(contentText(event.message.content));
        return;
      case 'run.end':
        showEnd(event.runId, event.status, event.error, event.reason);
        answered(pending.find((entry) => entry.runId === event.runId));
        prompt();
        return;
      case 'error': {
        if (openLine.size > 0) out('\n');
        options.errorOutput.write(`[error ${event.code}: ${event.message}]\n`);
        // A refused message.send (it started no run) is answered by an error of its thread.
        const refused = event.threadId === undefined ? undefined : unstarted();
        if (refused) undelivered += 1;
        answered(refused);
        prompt();
        return;
      }
      default:
        return;
    }
  };

  /**
   * After a reconnect: the messages sent before the connection dropped whose runs' ends were
   * not seen. The events missed are replayed (afterEventId) while the server still has them;
   * what it no longer has (a restarted server) is read from the API: a run that ended meanwhile
   * is shown from the history, and a message the server has no run for is said to be unconfirmed.
   */
  const reconcile = async () => {
    const current = thread;
    const open = pending.filter((entry) => entry.sent);
    if (!current || open.length === 0) return;
    let runs: Array<z.infer<typeof runSchema>>;
    try {
      runs = (await api('GET', `/api/threads/${encodeURIComponent(current.id)}/runs?limit=100`, z.object({ runs: z.array(runSchema) }))).runs;
    } catch {
      return; // lost again: the next connection tries again
    }
    for (const entry of open) {
      if (!pending.includes(entry)) continue; // answered by a replayed event meanwhile
      const run = runs.find((candidate) => (entry.runId ? candidate.id === entry.runId : candidate.correlationId === entry.requestId));
      if (!run) {
        if (!entry.runId && !entry.unconfirmed) {
          entry.unconfirmed = true;
          if (openLine.size > 0) out('\n');
          fail(`unconfirmed: "${preview(entry.text)}" was sent as the connection dropped, and the server has started no reply to it; send it again if none comes`);
        }
        continue;
      }
      entry.runId = run.id;
      entry.unconfirmed = false;
      if (run.status === 'running') continue; // its events come live
      settledRuns.add(run.id);
      if (openLine.has(run.id)) out('\n');
      openLine.delete(run.id);
      try {
        const history = await api('GET', `/api/threads/${encodeURIComponent(current.id)}/history?limit=50`, historySchema);
        for (const message of history.messages) if (message.runId === run.id && message.role === 'assistant') out(`agent> ${contentText(message.content)}\n`);
      } catch {
        out(`[the reply to "${preview(entry.text)}" came while the connection was down: see the thread's history]\n`);
      }
      showEnd(run.id, run.status, run.error, run.reason);
      answered(entry);
      prompt();
    }
    answered(undefined);
  };

  /** Wait, unless the chat is leaving meanwhile. */
  let wake: (() => void) | undefined;
  const pause = (milliseconds: number) =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, milliseconds);
      wake = done;
    });
  /** The connection closed. Unless the chat is leaving, say so and reconnect. */
  const dropped = (closedSocket: WebSocket) => {
    if (closedSocket !== socket) return;
    socket = undefined;
    connected = false;
    if (leaving || reconnecting) return;
    if (openLine.size > 0) out('\n');
    fail(`connection to ${base} lost; reconnecting`);
    void reconnect();
  };
  const reconnect = async () => {
    reconnecting = true;
    let lastError: unknown;
    for (const delay of options.reconnectDelaysMs ?? RECONNECT_DELAYS_MS) {
      await pause(delay);
      if (leaving) return;
      try {
        const candidate = await connect();
        if (leaving) {
          candidate.close();
          return;
        }
        if (thread) await subscribe(candidate, thread.id, lastEventId);
        if (leaving) {
          candidate.close();
          return;
        }
        connected = true;
        reconnecting = false;
        fail(`reconnected to ${base}`);
        printing = printing.then(reconcile).catch(() => undefined);
        sendNext();
        return;
      } catch (error) {
        lastError = error;
        socket?.close();
        socket = undefined;
        if (!(error instanceof ConnectionError)) break; // the server answered: the thread is gone, say
      }
    }
    reconnecting = false;
    if (lastError !== undefined && !(lastError instanceof ConnectionError)) failWith(lastError);
    else fail(`could not reconnect to ${base}; giving up`);
    for (const entry of pending) fail(`${entry.sent ? 'no reply to' : 'not sent'}: "${preview(entry.text)}"`);
    leave(1);
  };

  let inputEnded = false;
  /** Stop: close the connection and the input, and return the exit code. */
  const leave = (code: number) => {
    if (leaving) return;
    leaving = true;
    wake?.();
    lines.close();
    socket?.close();
    finish(code);
  };
  /**
   * A message is answered (its run ended, or it was refused). At the end of input the chat
   * leaves once no message is waiting for a reply it can still get (one unconfirmed after a
   * dropped connection does not hold it; it makes the exit code 1, as a refused one does).
   */
  const answered = (entry: Message | undefined) => {
    if (entry) pending.splice(pending.indexOf(entry), 1);
    if (leaving) return;
    if (inputEnded && pending.every((candidate) => candidate.unconfirmed)) return leave(undelivered > 0 || pending.length > 0 ? 1 : 0);
    sendNext();
  };
  let sending = false;
  /**
   * Send the oldest message not sent yet, when connected and no message sent is still
   * waiting for its run to start (the first makes the thread). While disconnected, messages
   * wait here for the new connection.
   */
  const sendNext = () => {
    const next = pending.find((entry) => !entry.sent);
    const on = socket;
    if (sending || !next || !connected || !on || unstarted()) return;
    sending = true;
    void (async () => {
      try {
        const threadId = await threadForMessage(on);
        if (on !== socket || on.readyState !== WebSocket.OPEN) throw new ConnectionError(`connection to ${base} lost`);
        on.send(JSON.stringify({ type: 'message.send', threadId, content: next.text, requestId: next.requestId }));
        next.sent = true;
        sending = false;
      } catch (error) {
        sending = false;
        // Not reached: it waits for the new connection (the drop is being handled), or goes
        // on it now if that is already open (its own sendNext found this one still sending).
        if (error instanceof ConnectionError) {
          if (socket !== on) sendNext();
          return;
        }
        failWith(error);
        undelivered += 1;
        answered(next);
        prompt();
      }
    })();
  };
  // Everything an event may touch is in place: connect.
  try {
    const first = await connect();
    if (thread) await subscribe(first, thread.id);
    connected = true;
  } catch (error) {
    leaving = true;
    socket?.close();
    return failWith(error);
  }
  const lines = createInterface({ input: options.input, terminal: false });
  prompt();
  lines.on('line', (line) => {
    const text = line.trim();
    if (text === '/quit' || text === '/exit') {
      lines.close();
      return;
    }
    if (!text) return prompt();
    pending.push({ requestId: randomUUID(), text, sent: false, unconfirmed: false });
    // Not lost, not silently: it goes once the connection is back (or is named when the chat gives up).
    if (!connected) fail(`not connected: "${preview(text)}" will be sent once the connection to ${base} is back`);
    sendNext();
  });
  // End of input (a pipe, or /quit): leave once every message has its whole reply.
  lines.on('close', () => {
    inputEnded = true;
    answered(undefined);
  });
  return finished;
}

/** How long to wait before each attempt to reconnect (about 10 s in all), then give up. */
const RECONNECT_DELAYS_MS = [200, 400, 800, 1600, 3200, 3200] as const;

/** A message as a short quote. */
function preview(text: string): string {
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/**
 * The URL of the server these settings start on this machine: the host and port it binds
 * (loadListenAddress, the server's own parsing), a wildcard address reached on loopback.
 */
export function localServerUrl(environment: Record<string, string | undefined>): string {
  const { host, port } = loadListenAddress(environment);
  const reachable = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`;
}

/** The server's base URL (no trailing slash), or undefined when it is not an http(s) URL. */
function serverBase(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return undefined;
  return url.trim().replace(/\/+$/, '');
}

/** Why a fetch failed, as ' (ECONNREFUSED)' (a system error's code, else its cause's message), or ''. */
function causeCodeOf(error: unknown): string {
  const cause = error instanceof Error ? error.cause : undefined;
  const code = cause && typeof cause === 'object' && 'code' in cause ? cause.code : undefined;
  if (typeof code === 'string') return ` (${code})`;
  return cause instanceof Error && cause.message ? ` (${cause.message})` : '';
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (part && typeof part === 'object' && 'text' in part && typeof part.text === 'string' ? part.text : '[attachment]'))
      .join('');
  }
  return JSON.stringify(content);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The next event on the socket that matches, or undefined when the socket closes first. */
function nextEvent(socket: WebSocket, match: (event: VigilEvent) => boolean): Promise<VigilEvent | undefined> {
  return new Promise((resolve) => {
    const onMessage = (message: MessageEvent) => {
      const parsed = vigilEventSchema.safeParse(safeJson(String(message.data)));
      if (parsed.success && match(parsed.data)) {
        socket.removeEventListener('message', onMessage);
        socket.removeEventListener('close', onClose);
        resolve(parsed.data);
      }
    };
    const onClose = () => {
      socket.removeEventListener('message', onMessage);
      resolve(undefined);
    };
    socket.addEventListener('message', onMessage);
    socket.addEventListener('close', onClose, { once: true });
  });
}
