/**
 * Tools in chat agents and approvals (issue 16) end to end: a real server on a real
 * database (SQLite and PostgreSQL, by the *.test.ts files beside this one), a real
 * ChatOpenAI talking to the scripted OpenAI-compatible server on loopback, which records
 * what the model received. Tests share one model server and run one after another.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ScriptedOpenAiServer, type RecordedRequest, type ScriptedResponse } from '../helpers/openai-server.js';
import { ALICE, BOB, startTestServer, type Backend, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';

type Json = Record<string, any>;

/** The last message the model received, and the tool results it was given. */
const lastOf = (request: RecordedRequest) => request.messages.at(-1) ?? {};
const toolResults = (request: RecordedRequest) => request.messages.filter((message) => message.role === 'tool');
const isPerson = (request: RecordedRequest, text: string) => lastOf(request).role === 'user' && JSON.stringify(lastOf(request).content).includes(text);

export function chatToolsSuite(backend: () => Backend, options: { slowMs: number }): void {
  let model: ScriptedOpenAiServer;
  let server: TestServer;
  const waitLong = 20_000 + options.slowMs * 10;

  beforeAll(async () => {
    model = await ScriptedOpenAiServer.start();
    server = await startTestServer(backend(), { environment: { VIGIL_MODEL: 'openai:scripted', OPENAI_BASE_URL: model.baseUrl }, autonomy: { modelRetries: 0 } });
  });
  afterAll(async () => {
    await server?.destroy();
    await model?.close();
  });

  async function agentWith(body: Json = {}): Promise<string> {
    const id = `t-${randomUUID().slice(0, 8)}`;
    const response = await server.request('POST', '/api/agents', { body: { id, name: 'tools', ...body } });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    return id;
  }
  async function threadOf(agentId: string): Promise<string> {
    return (await server.request('POST', '/api/threads', { body: { agentId } })).body.id as string;
  }
  async function say(threadId: string, content: string): Promise<Json> {
    const response = await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content } });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return response.body;
  }
  async function runs(threadId: string): Promise<Json[]> {
    return ((await server.request('GET', `/api/threads/${threadId}/runs?limit=100`)).body.runs as Json[]).reverse();
  }
  async function approvalsOf(threadId: string, token = ALICE.token): Promise<Json[]> {
    const response = await server.request('GET', `/api/approvals?threadId=${threadId}`, { token });
    expect(response.status).toBe(200);
    return response.body.approvals as Json[];
  }
  async function memories(agentId: string): Promise<string[]> {
    return ((await server.request('GET', `/api/agents/${agentId}/memories?limit=100`)).body.memories as Json[]).map((memory) => memory.content as string);
  }
  function decide(id: string, body: Json, token = ALICE.token) {
    return server.request('POST', `/api/approvals/${id}/decision`, { body, token });
  }
  /** Answers a model call from what it received: the responder sees every request. */
  function respond(responder: (request: RecordedRequest) => ScriptedResponse): void {
    model.reset();
    model.respondWith(responder);
  }
  const askMemoryWrite = { tools: { approval: { memory_write: { attended: 'ask' } } } };

  it('a chat agent calls a tool and answers from its result; history shows the call as the agent\'s turn', async () => {
    respond((request) =>
      toolResults(request).length === 0
        ? { toolCalls: [{ id: 'call_time', name: 'current_time', arguments: { timeZone: 'UTC' } }] }
        : { text: `The time is ${JSON.parse(toolResults(request)[0]!.content).iso}` },
    );
    const threadId = await threadOf(await agentWith());
    const body = await say(threadId, 'What time is it?');
    expect(body.run.status).toBe('succeeded');
    const offered = (model.requests[0]!.body.tools as Json[]).map((tool) => tool.function.name).sort();
    expect(offered).toEqual(['current_time', 'memory_search', 'memory_write']);
    const [result] = toolResults(model.requests[1]!);
    expect(result).toMatchObject({ tool_call_id: 'call_time' });
    const reply = body.messages.at(-1);
    expect(reply.role).toBe('assistant');
    expect(reply.content).toBe(`The time is ${JSON.parse(result!.content).iso}`);
    const history = (await server.request('GET', `/api/threads/${threadId}/history?include=internal`)).body.messages as Json[];
    expect(history.map((message) => message.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    const tool = history[2]!;
    expect(tool.additionalKwargs).toMatchObject({ tool_name: 'current_time', tool_arguments: { timeZone: 'UTC' }, tool_status: 'succeeded' });
    expect(history.filter((message) => message.role === 'user')).toHaveLength(1);
  });

  it('a tool that throws becomes an error tool message the model reads; the run succeeds', async () => {
    respond((request) =>
      toolResults(request).length === 0 ? { toolCalls: [{ id: 'call_bad', name: 'current_time', arguments: { timeZone: 'Nowhere/Atlantis' } }] } : { text: 'That zone does not exist.' },
    );
    const threadId = await threadOf(await agentWith());
    const body = await say(threadId, 'Time in Atlantis?');
    expect(body.run.status).toBe('succeeded');
    const [result] = toolResults(model.requests[1]!);
    expect(result!.content).toContain('unknown time zone');
    expect(body.messages.at(-1).content).toBe('That zone does not exist.');
  });

  it('parallel tool calls of one step all run, and each result reaches the model', async () => {
    respond((request) =>
      toolResults(request).length === 0
        ? { toolCalls: [{ id: 'call_a', name: 'memory_write', arguments: { content: 'likes sailing' } }, { id: 'call_b', name: 'current_time', arguments: {} }] }
        : { text: 'Noted.' },
    );
    const agentId = await agentWith();
    const body = await say(await threadOf(agentId), 'Remember I like sailing');
    expect(body.run.status).toBe('succeeded');
    expect(toolResults(model.requests[1]!).map((message) => message.tool_call_id).sort()).toEqual(['call_a', 'call_b']);
    expect(await memories(agentId)).toEqual(['likes sailing']);
  });

  it('I9: identical repeated calls are refused and the turn ends at its tool step bound, with a stated reason', async () => {
    respond(() => ({ toolCalls: [{ name: 'current_time', arguments: { timeZone: 'UTC' } }] }));
    const threadId = await threadOf(await agentWith({ tools: { maxSteps: 3, maxIdenticalCalls: 1 } }));
    const body = await say(threadId, 'loop forever');
    expect(body.run.status).toBe('succeeded');
    expect(body.run.reason).toBe('the turn reached its tool step limit');
    expect(model.requests).toHaveLength(4); // 3 tool steps, then one call offered no tools
    expect(model.requests[3]!.body.tools).toBeUndefined();
    expect(toolResults(model.requests[2]!).at(-1)!.content).toContain('already made 1 times');
  });
}
