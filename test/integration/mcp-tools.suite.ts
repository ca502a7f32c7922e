import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createEchoServer } from '../helpers/mcp-echo-server.js';
import { openPlannerHarness, USER, type PlannerHarness } from '../helpers/planner-harness.js';
import { approve, execute, noKnowledge, step, strategicPlan, tacticalPlan } from '../helpers/planner-scripts.js';
import { always, ScriptedChatModel } from '../helpers/scripted-model.js';
import type { Backend } from '../helpers/test-server.js';
import { makeTempDir, removeTempDir } from '../helpers/temp-dir.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SERVER_SCRIPT = fileURLToPath(new URL('../helpers/mcp-echo-server.ts', import.meta.url));

/** MCP tools from servers configured per agent: stdio (a child process) and streamable HTTP (loopback). */
export function mcpToolsSuite(backend: () => Backend): void {
  let harness: PlannerHarness;
  let model = new ScriptedChatModel();
  let http: Server;
  let httpUrl: string;

  beforeAll(async () => {
    harness = await openPlannerHarness(backend(), { model: () => model, mcpStdioCommands: [process.execPath] });
    // Stateless streamable HTTP: a fresh server and transport per request.
    http = createServer(async (request, response) => {
      if (request.method !== 'POST') {
        response.writeHead(405).end();
        return;
      }
      const server = createEchoServer('calc');
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      response.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(request, response);
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    httpUrl = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  });
  afterAll(async () => {
    await harness?.destroy(); // closes the MCP connections (and the stdio child)
    http?.closeAllConnections();
    await new Promise((resolve) => http?.close(resolve));
  });

  const stdioServer = { transport: 'stdio', command: process.execPath, args: ['--import', 'tsx', SERVER_SCRIPT], cwd: ROOT };

  async function planWith(tool: string, args: Record<string, unknown>, settings: Record<string, unknown>) {
    model = new ScriptedChatModel({
      knowledge_plan: [noKnowledge],
      strategic_plan: [strategicPlan('Use the tool', 'Call it')],
      tactical_plan: [tacticalPlan(step('call the MCP tool', [tool]))],
      executor_step: [execute([{ tool, args }], true, 'called')],
      tactical_critique: always(approve()),
      strategic_critique: [approve()],
      text: ['Done with the tool.'],
    });
    const agent = await harness.agent(settings);
    const thread = await harness.thread(agent);
    const outcome = await harness.say(thread, `Please use ${tool}`);
    const plan = (await harness.plans.listByThread(USER, thread.id, { limit: 1 }))[0]!;
    return { agent, outcome, plan, calls: (await harness.plans.listToolCalls(USER, plan.id, { limit: 10 })).toolCalls, model };
  }

  it('an MCP tool served over stdio is listed and called, and the call is recorded', async () => {
    const settings = { mcpServers: { echo: stdioServer } };
    const agent = await harness.agent(settings);
    const listed = await harness.service.tools(USER, agent.id);
    expect(listed.unavailable).toEqual([]);
    const names = listed.tools.map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(['memory_search', 'memory_write', 'current_time', 'mcp__echo__echo', 'mcp__echo__add']));
    expect(names).not.toContain('http_fetch'); // no allow-list, no fetch tool
    const echo = listed.tools.find((tool) => tool.name === 'mcp__echo__echo')!;
    expect(echo).toMatchObject({ source: 'mcp', server: 'echo', description: 'Echo the text back.' });
    expect(echo.parameters).toMatchObject({ type: 'object', properties: { text: { type: 'string' } } });

    const { outcome, plan, calls, model: used } = await planWith('mcp__echo__echo', { text: 'hello over stdio' }, settings);
    expect(outcome.run.status).toBe('succeeded');
    expect(plan.status).toBe('completed');
    expect(calls.map((call) => [call.tool, call.status, call.output, call.args])).toEqual([['mcp__echo__echo', 'succeeded', 'echo: hello over stdio', { text: 'hello over stdio' }]]);
    // The tactical planner was shown the MCP tool, with its arguments.
    expect(String(used.callsOf('tactical_plan')[0]!.messages.at(-1)?.content)).toContain('mcp__echo__echo');
  });

  it('an MCP tool served over streamable HTTP on loopback is listed and called', async () => {
    const settings = { mcpServers: { calc: { transport: 'http', url: httpUrl } } };
    const agent = await harness.agent(settings);
    const listed = await harness.service.tools(USER, agent.id);
    expect(listed.tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['mcp__calc__add', 'mcp__calc__echo']));
    const { calls } = await planWith('mcp__calc__add', { a: 2, b: 40 }, settings);
    expect(calls.map((call) => [call.tool, call.status, call.output])).toEqual([['mcp__calc__add', 'succeeded', '42']]);
  });

  it('an MCP call with bad arguments is recorded as failed, and the plan goes on', async () => {
    const { calls, plan } = await planWith('mcp__echo__add', { a: 'two' }, { mcpServers: { echo: stdioServer } });
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ tool: 'mcp__echo__add', status: 'failed', output: null });
    expect(calls[0]!.error).toBeTruthy();
    expect(plan.status).toBe('completed');
  });

  it('a stdio command the operator did not allow is refused and listed as unavailable; the built-ins remain', async () => {
    const agent = await harness.agent({ mcpServers: { shell: { transport: 'stdio', command: '/bin/sh', args: ['-c', 'echo pwned'] } } });
    const listed = await harness.service.tools(USER, agent.id);
    expect(listed.unavailable).toEqual([{ server: 'shell', error: expect.stringContaining('VIGIL_MCP_STDIO_COMMANDS') }]);
    expect(listed.tools.map((tool) => tool.source)).toEqual(['built-in', 'built-in', 'built-in']);
  });

  it('a stdio server that never answers is waited for once, within the connect timeout: the plan runs on without it', async () => {
    const directory = await makeTempDir();
    const spawns = join(directory, 'spawns.txt');
    // Starts, notes that it started, reads what it is sent and never answers; ends when its stdin closes.
    const script = `require('node:fs').appendFileSync(${JSON.stringify(spawns)}, 'started\\n'); process.stdin.resume(); process.stdin.on('end', () => process.exit(0));`;
    const hanging = { transport: 'stdio', command: process.execPath, args: ['-e', script] };
    const own = await openPlannerHarness(backend(), { model: () => model, mcpStdioCommands: [process.execPath], mcp: { connectTimeoutMs: 1_000 } });
    try {
      model = new ScriptedChatModel({
        knowledge_plan: [noKnowledge],
        strategic_plan: [strategicPlan('Tell the time', 'Read the clock', 'Say it')],
        tactical_plan: [tacticalPlan(step('read the clock', ['current_time'])), tacticalPlan(step('say it', []))],
        executor_step: [execute([{ tool: 'current_time', args: {} }], true, 'read'), execute([], true, 'said')],
        tactical_critique: always(approve()),
        strategic_critique: [approve()],
        text: ['It is now.'],
      });
      const agent = await own.agent({ mcpServers: { stuck: hanging } });
      const listed = await own.service.tools(USER, agent.id);
      expect(listed.unavailable).toEqual([{ server: 'stuck', error: expect.stringContaining('within 1000 ms') }]);
      expect(listed.tools.map((tool) => tool.source)).toEqual(['built-in', 'built-in', 'built-in']);

      // Every node of the run builds its toolbox: the failure is remembered, not waited for again.
      const outcome = await own.say(await own.thread(agent), 'What time is it?');
      expect(outcome.run.status).toBe('succeeded');
      expect((await readFile(spawns, 'utf8')).trim().split('\n')).toEqual(['started']);
    } finally {
      await own.destroy();
      await removeTempDir(directory);
    }
  });
}
