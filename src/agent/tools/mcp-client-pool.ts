import type { StructuredToolInterface } from '@langchain/core/tools';
import type { Logger } from 'pino';
import type { McpServerSettings } from '../../domain/planner/planner-settings.js';
import { stableJson } from '../../domain/planner/loop-bounds.js';
import { packageInfo } from '../../package-info.js';
import { openMcpConnection, type McpConnection } from './mcp-connection.js';

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
  connection: McpConnection;
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
  private readonly clientInfo = { name: 'vigil', version: packageInfo().version };

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
    await Promise.all(all.map((entry) => entry.connection.close()));
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
      const connection = openMcpConnection(server, settings, {
        connectTimeoutMs: this.options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
        clientInfo: this.clientInfo,
        ...(this.options.toolTimeoutMs ? { toolTimeoutMs: this.options.toolTimeoutMs } : {}),
      });
      const created: PooledClient = { connection, lastUsed: Date.now() };
      entry = created;
      this.clients.set(key, created);
      connection.tools.catch(() => {
        // A server that failed to start (or hangs) is remembered for a while, then tried again.
        // Every planner node and every run builds its toolbox: forgotten at once, a hanging
        // server held each of them for the connect timeout (and spawned a process for each),
        // so one plan took minutes before its first step. Its connection is closed already.
        created.retryAfter = Date.now() + (this.options.failureMemoryMs ?? DEFAULT_FAILURE_MEMORY_MS);
      });
    }
    entry.lastUsed = Date.now();
    try {
      return { server, tools: await entry.connection.tools };
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
      await entry.connection.close();
    }
  }
}
