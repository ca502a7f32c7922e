import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HumanMessage, SystemMessage } from '@langchain/core/messages';
import { createModelFactory } from '../../src/adapters/llm/model-factory.js';
import { ScriptedOpenAiServer } from '../helpers/openai-server.js';

/**
 * The scripted OpenAI-compatible server itself, driven by the real ChatOpenAI that vigil's
 * model factory builds: what other tests rely on it for (streams, tool calls, statuses,
 * fixed ids, recorded requests) works as a provider's would.
 */
describe('scripted OpenAI-compatible server', () => {
  let server: ScriptedOpenAiServer;
  beforeAll(async () => {
    server = await ScriptedOpenAiServer.start();
  });
  afterAll(async () => {
    await server?.close();
  });
  const model = () => createModelFactory({ openaiBaseUrl: server.baseUrl, timeoutMs: 5_000 })('openai:scripted-model');

  it('streams text chunks and records the request body', async () => {
    server.reset();
    server.script({ text: 'one two three', id: 'chatcmpl-fixed' });
    const chunks: string[] = [];
    for await (const chunk of await model().stream([new SystemMessage('rules'), new HumanMessage('hi')])) chunks.push(String(chunk.content));
    expect(chunks.join('')).toBe('one two three');
    const request = server.lastRequest();
    expect(request.stream).toBe(true);
    expect(request.body.model).toBe('scripted-model');
    expect(request.messages.map((message) => [message.role, message.content])).toEqual([
      ['system', 'rules'],
      ['user', 'hi'],
    ]);
  });

  it('answers a non-streamed call with the scripted completion id and tool calls', async () => {
    server.reset();
    server.script({ id: 'chatcmpl-x', toolCalls: [{ id: 'call_1', name: 'lookup', arguments: { q: 'weather' } }] });
    const reply = await model().invoke([new HumanMessage('use a tool')]);
    expect(reply.tool_calls).toEqual([expect.objectContaining({ id: 'call_1', name: 'lookup', args: { q: 'weather' } })]);
    expect(reply.id).toBe('chatcmpl-x');
    expect(server.lastRequest().stream).toBe(false);
  });

  it('streams tool calls', async () => {
    server.reset();
    server.script({ toolCalls: [{ name: 'lookup', arguments: { q: 'tides' } }] });
    let merged: any;
    for await (const chunk of await model().stream([new HumanMessage('use a tool')])) merged = merged ? merged.concat(chunk) : chunk;
    expect(merged.tool_calls).toEqual([expect.objectContaining({ name: 'lookup', args: { q: 'tides' } })]);
  });

  it('answers with a scripted error status and its headers', async () => {
    server.reset();
    server.script({ status: 429, headers: { 'retry-after': '1' }, errorMessage: 'slow down' });
    const error = (await model().invoke([new HumanMessage('hi')]).then(() => ({ status: 200, message: 'answered' }), (caught: unknown) => caught)) as { status?: number; message: string };
    expect(error.status).toBe(429);
    expect(error.message).toContain('slow down');
  });

  it('cuts a stream after N chunks, and records a request the client gave up on', async () => {
    server.reset();
    server.script({ chunks: ['a', 'b', 'c', 'd'], cutAfterChunks: 2 });
    const seen: string[] = [];
    const failure = await (async () => {
      for await (const chunk of await model().stream([new HumanMessage('hi')])) seen.push(String(chunk.content));
    })().catch((caught: unknown) => caught);
    expect(failure).toBeInstanceOf(Error);
    expect(seen.join('')).toBe('ab');
  });
});
