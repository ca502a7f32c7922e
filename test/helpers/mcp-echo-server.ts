/**
 * A small MCP server for tests: `echo` and `add`. Run as a script it serves over stdio
 * (`node --import tsx test/helpers/mcp-echo-server.ts`); imported, `createEchoServer`
 * builds the same server for a streamable HTTP transport inside the test process.
 */
import { pathToFileURL } from 'node:url';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

export function createEchoServer(name = 'echo'): McpServer {
  const server = new McpServer({ name, version: '1.0.0' });
  server.registerTool('echo', { description: 'Echo the text back.', inputSchema: { text: z.string() } }, async ({ text }) => ({
    content: [{ type: 'text', text: `echo: ${text}` }],
  }));
  server.registerTool('add', { description: 'Add two numbers.', inputSchema: { a: z.number(), b: z.number() } }, async ({ a, b }) => ({
    content: [{ type: 'text', text: String(a + b) }],
  }));
  return server;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await createEchoServer().connect(new StdioServerTransport());
}
