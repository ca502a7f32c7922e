import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { McpClientPool } from '../../src/agent/tools/mcp-client-pool.js';
import { captureLogs } from '../helpers/log-capture.js';
import { makeTempDir, removeTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';

const HANGING_SERVER = fileURLToPath(new URL('../fixtures/mcp-hanging-server.mjs', import.meta.url));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('MCP client pool', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('a stdio server that does not start within the connect timeout has its process ended then, not at the SDK request timeout (60 s)', async () => {
    const directory = await makeTempDir();
    cleanups.push(() => removeTempDir(directory));
    const pidFile = join(directory, 'pid');
    const pool = new McpClientPool({ logger: captureLogs('silent').logger, allowedStdioCommands: [process.execPath], connectTimeoutMs: 1_000 });
    cleanups.push(() => pool.close());
    let pid: number | undefined;
    // Should the test fail, the process is not left behind.
    cleanups.push(async () => {
      if (pid !== undefined && alive(pid)) process.kill(pid, 'SIGKILL');
    });

    const [listed] = await pool.toolsOf({ stuck: { transport: 'stdio', command: process.execPath, args: [HANGING_SERVER, pidFile] } });
    expect(listed).toEqual({ server: 'stuck', tools: [], error: expect.stringContaining('within 1000 ms') });

    await waitFor(async () => (await readFile(pidFile, 'utf8').catch(() => '')) !== '', 10_000, 'the server to write its PID');
    pid = Number(await readFile(pidFile, 'utf8'));
    // Closing asks politely first (stdin ends, then SIGTERM two seconds later): the process
    // is gone within seconds of the timeout, where without the close it lived on for 60 s.
    await waitFor(() => !alive(pid!), 10_000, `the hanging MCP server (pid ${pid}) to be ended`);
  });
});
