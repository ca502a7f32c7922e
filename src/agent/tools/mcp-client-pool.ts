import { MultiServerMCPClient } from '@langchain/mcp-adapters';
import type { StructuredToolInterface } from '@langchain/core/tools';
import type { Logger } from 'pino';
import type { McpServerSettings } from '../../domain/planner/planner-settings.js';
import { stableJson } from '../../domain/planner/loop-bounds.js';

export interface McpPoolOptions {
  logger: Logger;
  /**
   * Commands a stdio MCP server may be started with, compared exactly (`*`: any).
   * Empty: stdio servers are refused. An agent's settings are written by its user, and a
   * stdio server is a process on this machine, so the operator decides which ones exist.
   */
  allowedStdioCommands: readonly string[];
  /** A server's connection is closed after this long unused. */
  idleMs?: number;
  /** One tool call's timeout. */
  toolTimeoutMs?: number;
  /** How long a server may take to start and list its tools before it counts as unavailable. */
  connectTimeoutMs?: number;
  /** How long a server that failed to start is reported unavailable before it is tried again. */
  failureMemoryMs?: number;
}

export interface McpServerTools {
  server: string;
  tools: StructuredToolInterface[];
  /** Why the server's tools are missing, when they are. */
  error?: string;
}

interface PooledClient {
  client: MultiServerMCPClient;
  tools: Promise<StructuredToolInterface[]>;
  lastUsed: number;
  /** Set when it failed: until then its error is the answer, without trying again. */
  retryAfter?: number;
}

const DEFAULT_CONNECT_TIMEOUT_MS = 15_000;
const DEFAULT_FAILURE_MEMORY_MS = 60_000;

/**
 * One MCP connection per distinct server setting, shared by every run that uses it and
 * closed after a while unused, so a stdio server is not spawned again for every node.
 * The pool lives for the server's lifetime (the composition root owns and closes it);
 * runs only borrow tools from it — nothing of it goes into graph state (I10).
 */
export class McpClientPool {
  private readonly clients = new Map<string, PooledClient>();
  private readonly sweeper: NodeJS.Timeout;
  private closed = false;

  constructor(private readonly options: McpPoolOptions) {
    const idleMs = options.idleMs ?? 5 * 60_000;
    this.sweeper = setInterval(() => void this.sweep(idleMs), Math.min(idleMs, 60_000));
    this.sweeper.unref();
  }

  /** Each configured server's tools, named `mcp__<server>__<tool>`; a failing server reports its error. */
  async toolsOf(servers: Record<string, McpServerSettings>): Promise<McpServerTools[]> {
    return Promise.all(Object.entries(servers).map(([server, settings]) => this.serverTools(server, settings)));
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
    const all = [...this.clients.values()];
    this.clients.clear();
    await Promise.all(all.map((entry) => entry.client.close().catch(() => undefined)));
  }

  private async serverTools(server: string, settings: McpServerSettings): Promise<McpServerTools> {
    if (this.closed) return { server, tools: [], error: 'the server is stopping' };
    if (settings.transport === 'stdio' && !this.stdioAllowed(settings.command)) {
      return { server, tools: [], error: `stdio MCP command "${settings.command}" is not allowed on this server (VIGIL_MCP_STDIO_COMMANDS)` };
    }
    const key = stableJson({ server, settings });
    let entry = this.clients.get(key);
    if (entry?.retryAfter !== undefined && Date.now() >= entry.retryAfter) {
      this.clients.delete(key);
      entry = undefined;
    }
    if (!entry) {
      const client = new MultiServerMCPClient({
        mcpServers: { [server]: toConnection(settings) },
        prefixToolNameWithServerName: true,
        additionalToolNamePrefix: 'mcp',
        onConnectionError: 'throw',
        useStandardContentBlocks: false,
        ...(this.options.toolTimeoutMs ? { defaultToolTimeout: this.options.toolTimeoutMs } : {}),
      });
      const created: PooledClient = { client, tools: withTimeout(client.getTools(), this.options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS, server), lastUsed: Date.now() };
      entry = created;
      this.clients.set(key, created);
      created.tools.catch(() => {
        // A server that failed to start (or hangs) is remembered for a while, then tried again.
        // Every planner node and every run builds its toolbox: forgotten at once, a hanging
        // server held each of them for the MCP SDK's 60 s request timeout (and spawned a
        // process for each), so one plan took minutes before its first step.
        created.retryAfter = Date.now() + (this.options.failureMemoryMs ?? DEFAULT_FAILURE_MEMORY_MS);
        // A stdio child still starting is not the client's yet: the SDK's own initialize
        // timeout ends it; the failure memory keeps that to one at a time per server.
        void client.close().catch(() => undefined);
      });
    }
    entry.lastUsed = Date.now();
    try {
      return { server, tools: await entry.tools };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.options.logger.warn({ server, err: error }, 'MCP server unavailable');
      return { server, tools: [], error: message.slice(0, 500) };
    }
  }

  private stdioAllowed(command: string): boolean {
    // Exact match only: "node" allows the bare name (looked up on PATH), not /tmp/x/node.
    return this.options.allowedStdioCommands.includes('*') || this.options.allowedStdioCommands.includes(command);
  }

  private async sweep(idleMs: number): Promise<void> {
    const now = Date.now();
    for (const [key, entry] of this.clients) {
      if (now - entry.lastUsed < idleMs) continue;
      this.clients.delete(key);
      await entry.client.close().catch((error: unknown) => this.options.logger.warn({ err: error }, 'closing an idle MCP connection failed'));
    }
  }
}

/** The server's tools, or an error once `timeoutMs` has passed without them. */
function withTimeout<T>(work: Promise<T>, timeoutMs: number, server: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`MCP server "${server}" did not start and list its tools within ${timeoutMs} ms`)), timeoutMs);
    timer.unref();
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

function toConnection(settings: McpServerSettings) {
  if (settings.transport === 'stdio') {
    return {
      transport: 'stdio' as const,
      command: settings.command,
      args: settings.args,
      ...(settings.env ? { env: settings.env } : {}),
      ...(settings.cwd ? { cwd: settings.cwd } : {}),
      stderr: 'ignore' as const,
      restart: { enabled: false },
    };
  }
  return { transport: 'http' as const, url: settings.url, ...(settings.headers ? { headers: settings.headers } : {}), automaticSSEFallback: false };
}
