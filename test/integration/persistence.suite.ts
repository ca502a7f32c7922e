import { afterAll, beforeAll, expect, it } from 'vitest';
import { HumanMessage, type BaseMessage } from '@langchain/core/messages';
import { ALICE, startTestServer, type Backend, type TestServer } from '../helpers/test-server.js';

/** What must survive a restart: history, metadata, thread state — on each backend. */
export function persistenceSuite(backend: () => Backend): void {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(backend());
  });
  afterAll(async () => {
    await server?.destroy();
  });

  const nestedMetadata = {
    synthetic: true,
    trigger_type: 'task_incomplete',
    trigger_reason: 'nested ✓ ünïcödé 🙂',
    extra: { list: [1, 'two', { three: null }], flag: false },
  };

  it('I3: a new server process returns the same history and metadata, bit for bit', async () => {
    const thread = (await server.request('POST', '/api/threads', { body: { title: 'restart me' } })).body;
    await server.request('POST', `/api/threads/${thread.id}/messages`, { body: { content: 'a real message' } });
    await server.services.conversations.runTriggered(ALICE.id, thread.id, {
      trigger: 'autonomy',
      input: new HumanMessage({ content: [{ type: 'text', text: 'Check in about the incomplete task we discussed.' }], additional_kwargs: nestedMetadata }),
    });
    await server.request('POST', `/api/threads/${thread.id}/messages`, { body: { content: [{ type: 'text', text: 'multimodal' }, { type: 'image_url', image_url: 'data:,' }] } });

    const visibleBefore = await server.request('GET', `/api/threads/${thread.id}/history`);
    const allBefore = await server.request('GET', `/api/threads/${thread.id}/history?include=internal`);
    const listBefore = await server.request('GET', '/api/threads');
    const stateBefore = await server.storage.checkpointer.getTuple({ configurable: { thread_id: thread.id } });

    server = await server.restart();

    expect((await server.request('GET', `/api/threads/${thread.id}/history`)).body).toEqual(visibleBefore.body);
    const allAfter = await server.request('GET', `/api/threads/${thread.id}/history?include=internal`);
    expect(allAfter.body).toEqual(allBefore.body);
    expect(allAfter.body.messages.find((message: { visibility: string }) => message.visibility === 'internal').additionalKwargs).toStrictEqual(nestedMetadata);
    expect((await server.request('GET', '/api/threads')).body).toEqual(listBefore.body);

    const stateAfter = await server.storage.checkpointer.getTuple({ configurable: { thread_id: thread.id } });
    const messagesAfter = stateAfter?.checkpoint.channel_values.messages as BaseMessage[];
    const messagesBefore = stateBefore?.checkpoint.channel_values.messages as BaseMessage[];
    expect(messagesAfter.map((message) => message.additional_kwargs)).toStrictEqual(messagesBefore.map((message) => message.additional_kwargs));
    expect(messagesAfter.find((message) => message.additional_kwargs.synthetic === true)?.additional_kwargs).toStrictEqual(nestedMetadata);

    // And the thread goes on after the restart, on the restored state.
    const next = await server.request('POST', `/api/threads/${thread.id}/messages`, { body: { content: 'still there?' } });
    expect(next.body.run.status).toBe('succeeded');
    const finalState = await server.storage.checkpointer.getTuple({ configurable: { thread_id: thread.id } });
    expect((finalState?.checkpoint.channel_values.messages as BaseMessage[]).length).toBe(messagesBefore.length + 2);
  });

  it('I10: thread state holds only serialisable data', async () => {
    const thread = (await server.request('POST', '/api/threads', { body: {} })).body;
    await server.request('POST', `/api/threads/${thread.id}/messages`, { body: { content: 'remember this' } });
    const tuple = await server.storage.checkpointer.getTuple({ configurable: { thread_id: thread.id } });
    const values = tuple?.checkpoint.channel_values ?? {};
    expect(Object.keys(values).sort()).toEqual(expect.arrayContaining(['messages']));
    const problems = unserialisable(values, 'state');
    expect(problems).toEqual([]);
    const messages = values.messages as BaseMessage[];
    // Messages serialise to LangChain's JSON form and come back equal.
    for (const message of messages) expect(JSON.parse(JSON.stringify(message.toDict()))).toEqual(message.toDict());
  });
}

/** Paths of values JSON cannot carry: functions, symbols, bigints, class instances other than messages. */
function unserialisable(value: unknown, path: string, seen = new Set<unknown>()): string[] {
  if (value === null || ['string', 'number', 'boolean', 'undefined'].includes(typeof value)) return [];
  if (typeof value === 'function' || typeof value === 'symbol' || typeof value === 'bigint') return [`${path}: ${typeof value}`];
  if (seen.has(value)) return [`${path}: cycle`];
  seen.add(value);
  if (Array.isArray(value)) return value.flatMap((item, index) => unserialisable(item, `${path}[${index}]`, seen));
  const record = value as Record<string, unknown>;
  const prototype = Object.getPrototypeOf(record);
  if (prototype !== Object.prototype && prototype !== null) {
    // LangChain messages are serialisable by design (lc_serializable): check their data.
    if (typeof (record as { toDict?: unknown }).toDict === 'function') return unserialisable((record as unknown as BaseMessage).toDict(), `${path}<message>`, seen);
    return [`${path}: instance of ${prototype?.constructor?.name ?? 'unknown'}`];
  }
  return Object.entries(record).flatMap(([key, item]) => unserialisable(item, `${path}.${key}`, seen));
}
