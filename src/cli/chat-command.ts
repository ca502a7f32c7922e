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
}

/** A message typed: sent (with its request id) once the one before it has started its run. */
interface Message {
  requestId: string;
  text: string;
  sent: boolean;
  runId?: string;
}

/** The server could not be reached at all (as opposed to a server that answered with an error). */
class ConnectionError extends Error {}

const threadSchema = z.object({ id: z.string(), agentId: z.string(), title: z.string().nullable() }).passthrough();
const runSchema = z.object({ meta: z.record(z.string(), z.unknown()), correlationId: z.string() }).passthrough();
const historySchema = z.object({ messages: z.array(z.object({ role: z.string(), content: z.unknown() }).passthrough()) }).passthrough();

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
  const socket = new WebSocket(socketUrl);
  const opened = new Promise<void>((resolve, reject) => {
    socket.addEventListener('open', () => resolve(), { once: true });
    socket.addEventListener('error', () => reject(new ConnectionError(`cannot open ${socketUrl.replace(/\?token=.*/, '')}`)), { once: true });
  });
  try {
    await opened;
  } catch (error) {
    return failWith(error);
  }
  /** Subscribe to the thread, and wait until no later event of it can be missed. */
  const subscribe = async (threadId: string): Promise<void> => {
    const answered = nextEvent(socket, (event) => (event.type === 'thread.subscribed' || event.type === 'error') && event.threadId === threadId);
    socket.send(JSON.stringify({ type: 'thread.subscribe', threadId }));
    const answer = await answered;
    if (answer.type === 'error') throw new Error(`${answer.code}: ${answer.message}`);
  };
  if (thread) {
    try {
      await subscribe(thread.id);
    } catch (error) {
      socket.close();
      return failWith(error);
    }
  }
  /**
   * The thread of a new chat is made with its first message, and subscribed before the
   * message is sent: the run it starts, and all that comes later, is seen from its start.
   */
  const threadForMessage = async (): Promise<string> => {
    if (!thread) {
      const made = await api('POST', '/api/threads', threadSchema, options.agent ? { agentId: options.agent } : {});
      await subscribe(made.id);
      thread = made;
      out(`(thread ${made.id} with agent ${made.agentId})\n`);
    }
    return thread.id;
  };

  const prompt = () => out('you> ');
  /** Runs whose tokens were printed, so their whole message is not printed again. */
  const streamed = new Set<string>();
  const openLine = new Set<string>();
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
  /** The message sent whose run has not started yet, if any. */
  const unstarted = () => pending.find((entry) => entry.sent && entry.runId === undefined);
  /** The message a person's run answers: the one with its correlationId (another client's run matches none). */
  const claimRun = async (runId: string) => {
    let correlationId: string | undefined;
    try {
      correlationId = (await api('GET', `/api/runs/${encodeURIComponent(runId)}`, runSchema)).correlationId;
    } catch {
      correlationId = undefined; // not found out: the message waiting for its run is the likeliest
    }
    const entry = correlationId === undefined ? unstarted() : pending.find((candidate) => candidate.requestId === correlationId);
    if (entry) entry.runId = runId;
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
  socket.addEventListener('message', (message) => {
    const parsed = vigilEventSchema.safeParse(safeJson(String(message.data)));
    if (!parsed.success) return;
    const event: VigilEvent = parsed.data;
    printing = printing.then(() => show(event)).catch(() => undefined);
  });
  const show = async (event: VigilEvent): Promise<void> => {
    if ('threadId' in event && event.threadId !== undefined && event.threadId !== thread?.id) return;
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
        if (event.status === 'failed') out(`\n[the run failed: ${event.error?.code ?? 'ERROR'}: ${event.error?.message ?? event.reason ?? ''}]`);
        if (event.status === 'cancelled') out(`\n[cancelled${event.reason ? `: ${event.reason}` : ''}]`);
        if (event.status === 'interrupted') out('\n[waiting for your approval of a tool call: GET /api/approvals]');
        if (openLine.delete(event.runId) || event.status !== 'succeeded') out('\n');
        streamed.delete(event.runId);
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

  const closed = new Promise<number>((resolve) => {
    socket.addEventListener('close', () => resolve(undelivered > 0 ? 1 : 0), { once: true });
  });
  let inputEnded = false;
  /** A message is answered (its run ended, or it was refused): at the end of input, the last one lets the chat leave. */
  const answered = (entry: Message | undefined) => {
    if (entry) pending.splice(pending.indexOf(entry), 1);
    if (inputEnded && pending.length === 0) socket.close();
    else sendNext();
  };
  let sending = false;
  /** Send the oldest message not sent yet, unless one sent is still waiting for its run (the first makes the thread). */
  const sendNext = () => {
    const next = pending.find((entry) => !entry.sent);
    if (sending || !next || unstarted()) return;
    sending = true;
    void (async () => {
      try {
        const threadId = await threadForMessage();
        socket.send(JSON.stringify({ type: 'message.send', threadId, content: next.text, requestId: next.requestId }));
        next.sent = true;
        sending = false;
      } catch (error) {
        sending = false;
        failWith(error);
        undelivered += 1;
        answered(next);
        prompt();
      }
    })();
  };
  const lines = createInterface({ input: options.input, terminal: false });
  prompt();
  lines.on('line', (line) => {
    const text = line.trim();
    if (text === '/quit' || text === '/exit') {
      lines.close();
      return;
    }
    if (!text) return prompt();
    pending.push({ requestId: randomUUID(), text, sent: false });
    sendNext();
  });
  // End of input (a pipe, or /quit): leave once every message has its whole reply.
  lines.on('close', () => {
    inputEnded = true;
    answered(undefined);
  });
  return closed;
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

/** The next event on the socket that matches. */
function nextEvent(socket: WebSocket, match: (event: VigilEvent) => boolean): Promise<VigilEvent> {
  return new Promise((resolve) => {
    const onMessage = (message: MessageEvent) => {
      const parsed = vigilEventSchema.safeParse(safeJson(String(message.data)));
      if (parsed.success && match(parsed.data)) {
        socket.removeEventListener('message', onMessage);
        resolve(parsed.data);
      }
    };
    socket.addEventListener('message', onMessage);
  });
}
