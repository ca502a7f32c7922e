import { loadMcpTools } from '@langchain/mcp-adapters';
import type { StructuredToolInterface } from '@langchain/core/tools';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { McpServerSettings } from '../../domain/planner/planner-settings.js';

export interface McpConnectionOptions {
  /** How long the server may take to start and list its tools; then the connection is closed. */
  connectTimeoutMs: number;
  /** One tool call's timeout. */
  toolTimeoutMs?: number;
  /** Who vigil says it is in the MCP handshake. */
  clientInfo: { name: string; version: string };
}

export interface McpConnection {
  /** The server's tools, named `mcp__<server>__<tool>`; rejects when it failed or took too long. */
  readonly tools: Promise<StructuredToolInterface[]>;
  /** Ends the connection (and a stdio server's process). */
  close(): Promise<void>;
}

/**
 * Connects to one MCP server and lists its tools. The SDK client and its transport are
 * built here, not inside `MultiServerMCPClient`, because that one only hands its transport
 * over once the handshake succeeded: a stdio server that hung in `initialize` could not be
 * closed, and its process lived on until the SDK's own 60 s request timeout.
 */
export function openMcpConnection(server: string, settings: McpServerSettings, options: McpConnectionOptions): McpConnection {
  const client = new Client(options.clientInfo);
  // One close, shared: the pool's shutdown waits for a close the timeout already began.
  let closing: Promise<void> | undefined;
  const close = () => (closing ??= client.close().catch(() => undefined));
  const listing = (async () => {
    // connect() registers the transport before its first await, so close() reaches it (and
    // a stdio child) from the moment the process is being spawned.
    try {
      await client.connect(transportFor(settings));
      return await loadMcpTools(server, client, {
        prefixToolNameWithServerName: true,
        additionalToolNamePrefix: 'mcp',
        useStandardContentBlocks: false,
        throwOnLoadError: true,
        ...(options.toolTimeoutMs ? { defaultToolTimeout: options.toolTimeoutMs } : {}),
      });
    } catch (error) {
      throw new Error(`MCP server "${server}" failed to start or list its tools: ${error instanceof Error ? error.message : String(error)}`);
    }
  })();
  const tools = withTimeout(listing, options.connectTimeoutMs, server).catch((error: unknown) => {
    // Whatever went wrong (the timeout above all), the connection is of no use: close it
    // now, which ends a stdio server's process instead of leaving it to the SDK's timeout.
    // Not awaited: ending a process that ignores its closed stdin takes seconds, and the
    // caller should hear at once that the server is unavailable.
    void close();
    throw error;
  });
  return { tools, close };
}

function transportFor(settings: McpServerSettings): Transport {
  if (settings.transport === 'stdio') {
    return new StdioClientTransport({
      command: settings.command,
      args: settings.args,
      // Given an environment, the server still finds its programs on this machine's PATH.
      ...(settings.env ? { env: { ...(process.env.PATH ? { PATH: process.env.PATH } : {}), ...settings.env } } : {}),
      ...(settings.cwd ? { cwd: settings.cwd } : {}),
      stderr: 'ignore',
    });
  }
  return new StreamableHTTPClientTransport(new URL(settings.url), settings.headers ? { requestInit: { headers: settings.headers } } : undefined);
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
