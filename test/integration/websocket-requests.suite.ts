import { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALICE, BOB, startTestServer, type Backend, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';
import { GatedModel } from './langgraph-sdk.suite.js';

type Frame = Record<string, any>;

/** A WebSocket on /api/ws collecting every frame the server sends. */
async function openSocket(server: { url: string }, token: string): Promise<{ socket: WebSocket; frames: Frame[]; send: (frame: unknown) => void }> {
  const socket = new WebSocket(`${server.url.replace('http', 'ws')}/api/ws?token=${token}`);
  await new Promise((resolve, reject) => {
    socket.once('open', resolve);
    socket.once('error', reject);
  });
  const frames: Frame[] = [];
  socket.on('message', (data) => frames.push(JSON.parse(String(data)) as Frame));
  return { socket, frames, send: (frame) => socket.send(typeof frame === 'string' ? frame : JSON.stringify(frame)) };
}

/** The WebSocket's message.send as a client tracks it (requestId): acknowledged, and its errors named. */
export function websocketRequestsSuite(backend: () => Backend): void {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer(backend());
  });
  afterAll(async () => {
    await server?.destroy();
  });

  async function newThread(token = ALICE.token): Promise<string> {
    const response = await server.request('POST', '/api/threads', { token, body: {} });
    expect(response.status).toBe(201);
    return response.body.id as string;
  }

  const frameFor = (frames: Frame[], requestId: string) => frames.find((frame) => frame.requestId === requestId);

  describe('message.send with a requestId', () => {
    it('is acknowledged with message.accepted (its run and the stored message\'s id) before its run starts; one without a requestId is not', async () => {
      const threadId = await newThread();
      const { socket, frames, send } = await openSocket(server, ALICE.token);
      send({ type: 'message.send', threadId, content: 'named', requestId: 'req-1' });
      await waitFor(() => frames.some((frame) => frame.type === 'run.end'), 20_000, 'the first run');
      send({ type: 'message.send', threadId, content: 'unnamed' });
      await waitFor(() => frames.filter((frame) => frame.type === 'run.end').length === 2, 20_000, 'the second run');
      socket.close();

      const accepted = frames.filter((frame) => frame.type === 'message.accepted');
      expect(accepted).toEqual([{ type: 'message.accepted', threadId, runId: expect.any(String), messageId: expect.any(String), requestId: 'req-1', at: expect.any(String) }]);
      const { runId, messageId } = accepted[0]!;
      // Before anything of its run, and it names what follows: the run, and the person's message as stored.
      expect(frames[0]).toBe(accepted[0]);
      expect(frames.find((frame) => frame.type === 'run.start')).toMatchObject({ runId, trigger: 'user' });
      const stored = frames.find((frame) => frame.type === 'message.end' && frame.message.role === 'user');
      expect(stored).toMatchObject({ runId, message: { id: messageId, content: 'named' } });
      expect((await server.request('GET', `/api/runs/${runId}`)).body).toMatchObject({ status: 'succeeded', correlationId: 'req-1' });
      const history = await server.request('GET', `/api/threads/${threadId}/history`);
      expect(history.body.messages.map((message: Frame) => [message.id, message.content])).toContainEqual([messageId, 'named']);
      // Without a requestId: as before, its run's events and nothing else.
      expect(frames.filter((frame) => frame.type === 'error')).toEqual([]);
    });

    it('an error it causes carries its requestId: refused by validation (when the id can be read), an unknown thread; nothing is accepted', async () => {
      const threadId = await newThread();
      const { socket, frames, send } = await openSocket(server, ALICE.token);
      send({ type: 'message.send', threadId, content: '   ', requestId: 'empty' });
      send({ type: 'message.send', threadId, content: 'x'.repeat(100_001), requestId: 'too-long' });
      send({ type: 'message.send', threadId, content: 'hi', requestId: 'forged', additional_kwargs: { synthetic: true } });
      send({ type: 'message.send', threadId: 'no-such-thread', content: 'hi', requestId: 'nowhere' });
      send({ type: 'message.send', threadId, content: 'hi', requestId: 'r'.repeat(129) }); // too long to be an id: not echoed
      send({ type: 'message.send', threadId, content: 'hi', requestId: 42 });
      await waitFor(() => frames.length >= 6, 10_000, 'an answer to every frame');
      socket.close();

      expect(frameFor(frames, 'empty')).toMatchObject({ type: 'error', code: 'VALIDATION_FAILED', threadId });
      expect(frameFor(frames, 'too-long')).toMatchObject({ type: 'error', code: 'VALIDATION_FAILED', threadId });
      expect(frameFor(frames, 'forged')).toMatchObject({ type: 'error', code: 'VALIDATION_FAILED', threadId });
      expect(frameFor(frames, 'nowhere')).toMatchObject({ type: 'error', code: 'THREAD_NOT_FOUND', threadId: 'no-such-thread' });
      const unreadable = frames.filter((frame) => frame.requestId === undefined);
      expect(unreadable).toHaveLength(2);
      expect(unreadable.every((frame) => frame.type === 'error' && frame.code === 'VALIDATION_FAILED' && frame.threadId === threadId)).toBe(true);
      expect(frames.filter((frame) => frame.type !== 'error')).toEqual([]);
      expect((await server.request('GET', `/api/threads/${threadId}/history?include=internal`)).body.messages).toEqual([]);
    });

    it('accepted while another run holds the thread, then failed as it waited (the thread deleted): the error carries its requestId', async () => {
      // A model that holds the first reply until released: the second message waits for its run.
      const held = await startTestServer(backend(), { models: () => new GatedModel({}) });
      try {
        const threadId = (await held.request('POST', '/api/threads', { body: {} })).body.id as string;
        const { socket, frames, send } = await openSocket(held, ALICE.token);
        send({ type: 'message.send', threadId, content: 'first [hold]', requestId: 'first' });
        await waitFor(() => GatedModel.held.length > 0, 10_000, 'the first run to reach the model');
        send({ type: 'message.send', threadId, content: 'and then this', requestId: 'queued' });
        await waitFor(() => frameFor(frames, 'queued') !== undefined, 10_000, 'the second message accepted');
        const accepted = frameFor(frames, 'queued')!;
        expect(accepted).toMatchObject({ type: 'message.accepted', threadId });
        expect((await held.request('DELETE', `/api/threads/${threadId}`)).status).toBe(204);
        await waitFor(() => frames.filter((frame) => frame.requestId === 'queued').length === 2, 10_000, "the queued message's error");
        socket.close();
        expect(frames.filter((frame) => frame.requestId === 'queued').at(-1)).toMatchObject({ type: 'error', code: 'THREAD_NOT_FOUND', threadId });
        // Its run never started.
        expect(frames.some((frame) => frame.type === 'run.start' && frame.runId === accepted.runId)).toBe(false);
        expect((await held.request('GET', `/api/runs/${accepted.runId}`)).status).toBe(404);
      } finally {
        for (const release of GatedModel.held.splice(0)) release();
        await held.destroy();
      }
    });

    it('I12: a message.send into another user\'s thread answers THREAD_NOT_FOUND with its requestId, never an acknowledgement', async () => {
      const threadId = await newThread(ALICE.token);
      const { socket, frames, send } = await openSocket(server, BOB.token);
      send({ type: 'message.send', threadId, content: 'let me in', requestId: 'intruder' });
      await waitFor(() => frames.length >= 1, 10_000, 'the answer');
      socket.close();
      expect(frames).toEqual([{ type: 'error', at: expect.any(String), code: 'THREAD_NOT_FOUND', message: expect.any(String), threadId, requestId: 'intruder' }]);
      expect((await server.request('GET', `/api/threads/${threadId}/history?include=internal`)).body.messages).toEqual([]);
      expect((await server.request('GET', `/api/threads/${threadId}/runs`)).body.runs).toEqual([]);
    });
  });
}
