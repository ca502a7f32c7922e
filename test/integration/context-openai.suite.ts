import { afterAll, beforeAll, expect, it } from 'vitest';
import { TokenCounter, type ToolSchema } from '../../src/agent/context/token-counter.js';
import { SUMMARY_REQUEST_MARKER } from '../../src/domain/context/conversation-summary.js';
import { ScriptedOpenAiServer, type RecordedRequest } from '../helpers/openai-server.js';
import { startTestServer, type Backend, type TestServer } from '../helpers/test-server.js';

/**
 * I14 against a real provider client: vigil's ChatOpenAI talks to our scripted
 * OpenAI-compatible server, which records every request and reports usage a quarter
 * above our own count. What the provider receives fits the budget (after the correction
 * its usage asks for), summary calls are plain internal requests whose text never
 * streams to the person, and the summary stands in for the folded messages.
 */
export function contextOpenAiSuite(backend: () => Backend): void {
  const BUDGET = 2000;
  const counter = new TokenCounter();
  let provider: ScriptedOpenAiServer;
  let server: TestServer;
  const tokensOf = (request: RecordedRequest) => request.messages.reduce((sum, message) => sum + 4 + counter.text(typeof message.content === 'string' ? message.content : JSON.stringify(message.content ?? '')), 0);
  // A request's tool definitions, as the provider receives them (it reports them in its usage too).
  const toolTokensOf = (request: RecordedRequest) => counter.tools(((request.body.tools ?? []) as Array<{ function: ToolSchema }>).map((tool) => tool.function));
  const isSummary = (request: RecordedRequest) => String(request.messages[0]?.content ?? '').startsWith(SUMMARY_REQUEST_MARKER);

  beforeAll(async () => {
    provider = await ScriptedOpenAiServer.start({
      fallback: (request) => {
        const prompt = Math.round((tokensOf(request) + toolTokensOf(request)) * 1.25);
        if (isSummary(request)) return { text: `SUMMARY-${request.index}: the person talked about their garden.`, usage: { prompt_tokens: prompt, completion_tokens: 12 } };
        return { text: 'Noted, thank you.', usage: { prompt_tokens: prompt, completion_tokens: 4 } };
      },
    });
    server = await startTestServer(backend(), { environment: { VIGIL_MODEL: 'openai:scripted-model', OPENAI_BASE_URL: provider.baseUrl, VIGIL_CONTEXT_TOKENS: String(BUDGET) } });
  });
  afterAll(async () => {
    await server?.destroy();
    await provider?.close();
  });

  it("I14: what the provider receives fits the budget its own usage reports, and a summary's text never streams to the person", async () => {
    const threadId = (await server.request('POST', '/api/threads', { body: {} })).body.id as string;
    const said = (turn: number) => `Turn ${turn}: ${`the roses, the tomatoes and the rain of week ${turn}. `.repeat(14).trim()}`;
    const streams: string[] = [];
    for (let turn = 1; turn <= 14; turn++) {
      const response = await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: said(turn) }, headers: { accept: 'text/event-stream' } });
      expect(response.status).toBe(200);
      streams.push(response.text);
    }
    const view = (await server.request('GET', `/api/threads/${threadId}/context`)).body;
    expect(view.budget).toMatchObject({ maxTokens: BUDGET, source: 'server' });
    // The provider's usage (a quarter above our count) corrected our counts.
    expect(view.budget.usageCorrection).toBeCloseTo(1.25, 1);

    const replies = provider.requests.filter((request) => !isSummary(request));
    const summaries = provider.requests.filter(isSummary);
    expect(replies).toHaveLength(14);
    expect(summaries.length).toBeGreaterThanOrEqual(2);
    // After the first reply reported usage, every input fits the budget by the provider's own count.
    for (const request of replies.slice(1)) expect(tokensOf(request) * 1.25).toBeLessThanOrEqual(BUDGET - view.budget.answerTokens + 1);
    for (const request of summaries) expect(tokensOf(request) * 1.25).toBeLessThanOrEqual(BUDGET);

    // The newest summary stands in for the folded messages: in the system message, never a user turn.
    const last = replies.at(-1)!;
    const latestSummary = `SUMMARY-${summaries.at(-1)!.index}`;
    expect(String(last.messages[0]!.content)).toContain(latestSummary);
    expect(last.messages.slice(1).some((message) => String(message.content).includes('SUMMARY-'))).toBe(false);
    expect(last.messages.some((message) => String(message.content).startsWith('Turn 1:'))).toBe(false);
    // Summary text never reached a person's stream or history (I2).
    for (const text of streams) expect(text).not.toContain('SUMMARY-');
    const history = await server.request('GET', `/api/threads/${threadId}/history?limit=200&include=internal`);
    expect(history.body.messages).toHaveLength(28);
    expect(JSON.stringify(history.body.messages)).not.toContain('SUMMARY-');

    // The run keeps what its model call received: the same window the provider got, by message id.
    const runs = (await server.request('GET', `/api/threads/${threadId}/runs?limit=20`)).body.runs as Array<Record<string, any>>;
    expect(runs).toHaveLength(14);
    for (const run of runs) expect(run.modelInputs).toHaveLength(1);
    const call = (runs[0]!.modelInputs as Array<Record<string, any>>)[0]!;
    const sent = last.messages.slice(1); // after the system message
    const messages = history.body.messages as Array<Record<string, any>>;
    const first = messages.findIndex((message) => message.id === call.window.firstMessageId);
    const lastIndex = messages.findIndex((message) => message.id === call.window.lastMessageId);
    expect(call.window.count).toBe(sent.length);
    expect(messages.slice(first, lastIndex + 1).map((message) => message.content)).toEqual(sent.map((message) => message.content));
    expect(call.summary).toMatchObject({ tokens: expect.any(Number) });
    expect(call.summary.coveredMessages).toBeGreaterThan(0);
    expect(call.inputTokens).toBeLessThanOrEqual(call.inputLimit);
    expect(call.envelopeTokens).toBeNull();
  });

  it('I14: a tool result too large for the budget reaches the provider cut, with its tool call, never as a lone tool result', async () => {
    const agent = await server.request('POST', '/api/agents', { body: { id: 'digger', name: 'Digger' } });
    expect(agent.status).toBe(201);
    // Memories the tool returns, far more than the budget; none shares a word with the person's message.
    for (let index = 0; index < 5; index++) {
      const added = await server.request('POST', '/api/agents/digger/memories', { body: { content: `zucchini ${index} ${'harvest tally zucchini '.repeat(120)}` } });
      expect(added.status).toBe(201);
    }
    const threadId = (await server.request('POST', '/api/threads', { body: { agentId: 'digger' } })).body.id as string;
    const before = provider.requests.length;
    provider.script({ toolCalls: [{ id: 'call_dig', name: 'memory_search', arguments: { query: 'zucchini', limit: 5 } }] });
    const response = await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'What do you have on file?' } });
    expect(response.status).toBe(200);
    expect(response.body.run.status).toBe('succeeded');

    const afterTool = provider.requests.slice(before).filter((request) => !isSummary(request)).slice(1);
    expect(afterTool.length).toBeGreaterThanOrEqual(1);
    const sent = afterTool[0]!.messages.slice(1); // after the system message
    expect(sent[0]!.role).not.toBe('tool');
    const resultAt = sent.findIndex((message) => message.role === 'tool');
    expect(resultAt).toBeGreaterThan(0);
    expect(sent[resultAt]!.tool_call_id).toBe('call_dig');
    expect(sent[resultAt - 1]).toMatchObject({ role: 'assistant', tool_calls: [expect.objectContaining({ id: 'call_dig' })] });
    expect(String(sent[resultAt]!.content)).toMatch(/\[… cut to fit the context budget\]$/);
    // Within the budget as that call was fitted (the usage correction of its time).
    const runs = (await server.request('GET', `/api/threads/${threadId}/runs?limit=5`)).body.runs as Array<Record<string, any>>;
    const inputs = runs[0]!.modelInputs as Array<Record<string, any>>;
    expect(inputs).toHaveLength(afterTool.length + 1);
    expect(inputs[1]).toMatchObject({ window: { count: sent.length, cut: true } });
    expect(tokensOf(afterTool[0]!)).toBeLessThanOrEqual(inputs[1]!.inputLimit);
    expect(inputs[1]!.inputTokens).toBeLessThanOrEqual(inputs[1]!.inputLimit);
  });

  it('I14: recalled memories far larger than the budget reach the provider fitted to it, the best-ranked first', async () => {
    expect((await server.request('POST', '/api/agents', { body: { id: 'rememberer', name: 'Rememberer' } })).status).toBe(201);
    for (let index = 0; index < 5; index++) {
      const added = await server.request('POST', '/api/agents/rememberer/memories', { body: { content: `orchids ${index}: ${'the orchids like rain water and bright shade; '.repeat(100)}` } });
      expect(added.status).toBe(201);
    }
    const threadId = (await server.request('POST', '/api/threads', { body: { agentId: 'rememberer' } })).body.id as string;
    const before = provider.requests.length;
    const response = await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'How do my orchids like their water?' } });
    expect(response.status).toBe(200);
    const request = provider.requests.slice(before).find((candidate) => !isSummary(candidate))!;
    expect(String(request.messages[0]!.content)).toContain('<recalled_memories>');
    expect(request.messages.at(-1)).toMatchObject({ role: 'user', content: 'How do my orchids like their water?' });
    const runs = (await server.request('GET', `/api/threads/${threadId}/runs?limit=5`)).body.runs as Array<Record<string, any>>;
    const input = (runs[0]!.modelInputs as Array<Record<string, any>>)[0]!;
    expect(tokensOf(request)).toBeLessThanOrEqual(input.inputLimit);
    expect(input.inputTokens).toBeLessThanOrEqual(input.inputLimit);
  });

  it("I14: the context endpoint shows exactly the window the next call receives, a superseded approval's call closed in both", async () => {
    expect((await server.request('POST', '/api/agents', { body: { id: 'asker', name: 'Asker', tools: { approval: { memory_write: { attended: 'ask' } } } } })).status).toBe(201);
    const threadId = (await server.request('POST', '/api/threads', { body: { agentId: 'asker' } })).body.id as string;
    provider.script({ toolCalls: [{ id: 'call_keep', name: 'memory_write', arguments: { content: 'likes figs' } }] });
    const waiting = await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'Remember that I like figs.' } });
    expect(waiting.body.run.status).toBe('interrupted');
    // A new message supersedes the waiting call: history keeps the call without a result.
    expect((await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'Never mind the figs.' } })).body.run.status).toBe('succeeded');
    const approvals = (await server.request('GET', `/api/approvals?threadId=${threadId}`)).body.approvals as Array<Record<string, any>>;
    expect(approvals[0]).toMatchObject({ status: 'superseded' });

    const view = (await server.request('GET', `/api/threads/${threadId}/context`)).body;
    const before = provider.requests.length;
    expect((await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'And the plums?' } })).body.run.status).toBe('succeeded');
    const sent = provider.requests.slice(before).find((request) => !isSummary(request))!.messages;
    const role: Record<string, string> = { human: 'user', ai: 'assistant', tool: 'tool' };
    // The call received the endpoint's window, then the new message (all of it fits the budget).
    expect([...view.messages.window.map((entry: Record<string, any>) => role[entry.type]), 'user']).toEqual(sent.slice(1).map((message) => message.role));
    const closed = view.messages.window.find((entry: Record<string, any>) => entry.type === 'tool');
    expect(closed).toMatchObject({ id: 'closed-call_keep' });
    expect(sent.find((message) => message.role === 'tool')).toMatchObject({ tool_call_id: 'call_keep' });
  });

  it("I14: the tools bound to a call are input too: with tools and a long message, the provider's messages and tool definitions stay within the budget", async () => {
    expect((await server.request('POST', '/api/agents', { body: { id: 'toolful', name: 'Toolful' } })).status).toBe(201);
    const threadId = (await server.request('POST', '/api/threads', { body: { agentId: 'toolful' } })).body.id as string;
    const before = provider.requests.length;
    const response = await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: `Read this: ${'the pears ripen late this year, '.repeat(600)}` } });
    expect(response.body.run.status).toBe('succeeded');
    const request = provider.requests.slice(before).find((candidate) => !isSummary(candidate))!;
    const tools = request.body.tools as Array<Record<string, any>>;
    expect(tools.length).toBeGreaterThan(0);
    const runs = (await server.request('GET', `/api/threads/${threadId}/runs?limit=5`)).body.runs as Array<Record<string, any>>;
    const input = (runs[0]!.modelInputs as Array<Record<string, any>>)[0]!;
    expect(input.tools).toMatchObject({ count: tools.length, tokens: expect.any(Number) });
    expect(input.tools.tokens).toBeGreaterThanOrEqual(toolTokensOf(request) * 0.9);
    // The person's message was cut to the room the system prompt and the tools leave.
    expect(String(request.messages.at(-1)!.content)).toMatch(/\[… cut to fit the context budget\]$/);
    expect(tokensOf(request) + toolTokensOf(request)).toBeLessThanOrEqual(input.inputLimit);
    expect(input.inputTokens).toBeLessThanOrEqual(input.inputLimit);
    const view = (await server.request('GET', `/api/threads/${threadId}/context`)).body;
    expect(view.tools).toEqual(input.tools);
  });

  it('I14, I2: the context endpoint includes the recalled memories the next call receives (the same recall, query and fitting), as their own part, writing nothing', async () => {
    expect((await server.request('POST', '/api/agents', { body: { id: 'recaller', name: 'Recaller' } })).status).toBe(201);
    // Room for an image (counted 1,600 tokens) beside the memories' share, so the next call folds nothing.
    expect((await server.request('PUT', '/api/agents/recaller/context', { body: { maxTokens: 12_000 } })).status).toBe(200);
    // More memories than their share of the budget takes: fitting leaves the lowest-ranked out.
    for (let index = 0; index < 5; index++) {
      const added = await server.request('POST', '/api/agents/recaller/memories', { body: { content: `ferns ${index}: ${'the ferns want damp peat and misted fronds; '.repeat(50 + index)}` } });
      expect(added.status).toBe(201);
    }
    const threadId = (await server.request('POST', '/api/threads', { body: { agentId: 'recaller' } })).body.id as string;
    expect((await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'How do my ferns like their water?' } })).body.run.status).toBe('succeeded');

    const runsBefore = (await server.request('GET', `/api/threads/${threadId}/runs?limit=20`)).body.runs as unknown[];
    const historyBefore = (await server.request('GET', `/api/threads/${threadId}/history?limit=200&include=internal`)).body.messages as unknown[];
    const requestsBefore = provider.requests.length;
    const view = (await server.request('GET', `/api/threads/${threadId}/context`)).body;
    expect(view.system.text).toContain('<recalled_memories>');
    expect(view.memories).toMatchObject({ count: expect.any(Number), tokens: expect.any(Number), query: { source: 'last_real_user_message' } });
    expect(view.memories.count).toBeGreaterThan(0);
    expect(view.memories.count).toBeLessThan(5);
    expect(view.memories.tokens).toBeGreaterThan(0);
    expect(view.memories.tokens).toBeLessThan(view.system.tokens);
    // Nothing ran, nothing was written, no model was called.
    expect(provider.requests.length).toBe(requestsBefore);
    expect((await server.request('GET', `/api/threads/${threadId}/runs?limit=20`)).body.runs).toHaveLength(runsBefore.length);
    expect((await server.request('GET', `/api/threads/${threadId}/history?limit=200&include=internal`)).body.messages).toHaveLength(historyBefore.length);
    expect((await server.request('GET', `/api/threads/${threadId}/context`)).body).toEqual(view);

    // The next message, an image alone (no text): its call's memory query is the last real
    // user message, as the endpoint's is (I2), so the provider's system message is the
    // endpoint's, but for the run's nonce.
    const image = [{ type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }];
    expect((await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: image } })).body.run.status).toBe('succeeded');
    const request = provider.requests.slice(requestsBefore).find((candidate) => !isSummary(candidate))!;
    const sentSystem = String(request.messages[0]!.content);
    const nonce = /this run's nonce: ([A-Za-z0-9_-]+)\)/.exec(sentSystem)![1]!;
    const asPreviewed = sentSystem.split(nonce).join('next-run');
    expect(asPreviewed).toBe(view.system.text);
    expect(4 + counter.text(asPreviewed)).toBe(view.system.tokens);
  });
}
