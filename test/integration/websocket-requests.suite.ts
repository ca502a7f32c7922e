import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALICE, BOB, startTestServer, type Backend, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';
import { openSocket } from '../helpers/thread-socket.js';
import { maxFrameBytes } from '../../src/http/websocket.js';
import { GatedModel } from './langgraph-sdk.suite.js';

type Frame = Record<string, any>;

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

  /**
   * A server of its own whose model holds each reply until released (GatedModel.held), a
   * thread of Alice's, and her socket, whose first message's run now holds the thread: what
   * she sends next waits for it. The caller releases what is held and destroys the server.
   */
  async function holdingThread() {
    const held = await startTestServer(backend(), { models: () => new GatedModel({}) });
    const threadId = (await held.request('POST', '/api/threads', { body: {} })).body.id as string;
    const socket = await openSocket(held, ALICE.token);
    socket.send({ type: 'message.send', threadId, content: 'first [hold]', requestId: 'first' });
    await waitFor(() => GatedModel.held.length > 0, 10_000, 'the first run to reach the model');
    return { held, threadId, ...socket };
  }

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

    it('I11: an error it causes carries its requestId: refused by validation (when the id can be read), an unknown thread; nothing is accepted', async () => {
      const threadId = await newThread();
      const { socket, frames, send } = await openSocket(server, ALICE.token);
      send({ type: 'message.send', threadId, content: '   ', requestId: 'empty' });
      send({ type: 'message.send', threadId, content: 'x'.repeat(100_001), requestId: 'too-long' });
      send({ type: 'message.send', threadId, content: 'hi', requestId: 'forged', additional_kwargs: { synthetic: true } });
      send({ type: 'message.send', threadId: 'no-such-thread', content: 'hi', requestId: 'nowhere' });
      send({ type: 'message.send', threadId, content: 'hi', requestId: 'r'.repeat(129) }); // too long to be an id: not echoed
      send({ type: 'message.send', threadId, content: 'hi', requestId: 42 });
      send({ type: 'message.send', threadId, content: 'hi', requestId: '' }); // blank: no name
      send({ type: 'message.send', threadId, content: 'hi', requestId: '   ' });
      // U+0000 is refused over the WebSocket as at the HTTP door (PostgreSQL's text cannot hold it).
      send({ type: 'message.send', threadId, content: 'nul \u0000 inside', requestId: 'nul' });
      await waitFor(() => frames.length >= 9, 10_000, 'an answer to every frame');
      socket.close();

      expect(frameFor(frames, 'empty')).toMatchObject({ type: 'error', code: 'VALIDATION_FAILED', threadId });
      expect(frameFor(frames, 'too-long')).toMatchObject({ type: 'error', code: 'VALIDATION_FAILED', threadId });
      expect(frameFor(frames, 'forged')).toMatchObject({ type: 'error', code: 'VALIDATION_FAILED', threadId });
      expect(frameFor(frames, 'nowhere')).toMatchObject({ type: 'error', code: 'THREAD_NOT_FOUND', threadId: 'no-such-thread' });
      expect(frameFor(frames, 'nul')).toMatchObject({ type: 'error', code: 'VALIDATION_FAILED', threadId, message: expect.stringContaining('U+0000') });
      const unreadable = frames.filter((frame) => frame.requestId === undefined);
      expect(unreadable).toHaveLength(4);
      expect(unreadable.every((frame) => frame.type === 'error' && frame.code === 'VALIDATION_FAILED' && frame.threadId === threadId)).toBe(true);
      expect(frames.filter((frame) => frame.type !== 'error')).toEqual([]);
      expect((await server.request('GET', `/api/threads/${threadId}/history?include=internal`)).body.messages).toEqual([]);
    });

    it('accepted while another run holds the thread, then failed as it waited (the thread deleted): the error carries its requestId', async () => {
      const { held, threadId, socket, frames, send } = await holdingThread();
      try {
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

    it('accepted while another run holds the thread, then cancelled by its run id (HTTP, the WebSocket): it never starts, its sender is told, its record says cancelled; another user cannot (I12)', async () => {
      const { held, threadId, socket, frames, send } = await holdingThread();
      try {
        send({ type: 'message.send', threadId, content: 'never mind this', requestId: 'by-http' });
        send({ type: 'message.send', threadId, content: 'nor this', requestId: 'by-socket' });
        await waitFor(() => frameFor(frames, 'by-http') !== undefined && frameFor(frames, 'by-socket') !== undefined, 10_000, 'both queued messages accepted');
        const byHttp = frameFor(frames, 'by-http')!.runId as string;
        const bySocket = frameFor(frames, 'by-socket')!.runId as string;

        // I12: Bob names Alice's queued run: not found, and it stays queued.
        expect((await held.request('POST', `/api/runs/${byHttp}/cancel`, { token: BOB.token })).body.error.code).toBe('RUN_NOT_FOUND');
        const cancelled = await held.request('POST', `/api/runs/${byHttp}/cancel`);
        expect(cancelled.status).toBe(202);
        expect(cancelled.body).toMatchObject({ id: byHttp, threadId, status: 'cancelled', trigger: 'user', correlationId: 'by-http' });
        send({ type: 'run.cancel', runId: bySocket });
        await waitFor(() => frames.filter((frame) => frame.requestId === 'by-http' || frame.requestId === 'by-socket').length === 4, 10_000, "the cancelled messages' errors");
        for (const requestId of ['by-http', 'by-socket']) {
          expect(frames.filter((frame) => frame.requestId === requestId).at(-1)).toMatchObject({ type: 'error', code: 'RUN_CANCELLED', threadId });
        }

        for (const release of GatedModel.held.splice(0)) release();
        await waitFor(() => frames.some((frame) => frame.type === 'run.end'), 10_000, 'the first run to end');
        socket.close();
        // Neither started: no run, no message of theirs in the thread; their records say they were cancelled (Bob sees none).
        for (const runId of [byHttp, bySocket]) {
          expect(frames.some((frame) => frame.type === 'run.start' && frame.runId === runId)).toBe(false);
          expect((await held.request('GET', `/api/runs/${runId}`)).body).toMatchObject({ id: runId, threadId, status: 'cancelled', trigger: 'user' });
          expect((await held.request('GET', `/api/runs/${runId}`, { token: BOB.token })).status).toBe(404);
        }
        const runs = (await held.request('GET', `/api/threads/${threadId}/runs`)).body.runs as Frame[];
        expect(runs.filter((run) => run.status === 'cancelled').map((run) => run.id).sort()).toEqual([byHttp, bySocket].sort());
        const history = await held.request('GET', `/api/threads/${threadId}/history?include=internal`);
        expect(history.body.messages.map((message: Frame) => message.content)).not.toContain('never mind this');
        expect(history.body.messages.map((message: Frame) => message.content)).not.toContain('nor this');
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

  describe('frame size: every message the limits allow fits through the WebSocket, as over HTTP', () => {
    /** Every UTF-16 code unit as a \uXXXX escape: 6 bytes a character, the most JSON can take for one. */
    const escaped = (text: string) => [...Array(text.length).keys()].map((index) => `\\u${text.charCodeAt(index).toString(16).padStart(4, '0')}`).join('');
    const runEnded = (frames: Frame[], runId: string) => frames.some((frame) => frame.type === 'run.end' && frame.runId === runId);

    it('a text of 100,000 characters in multi-byte characters (raw UTF-8, or escaped as surrogate pairs), and several such text blocks, are accepted as over HTTP', async () => {
      const threadId = await newThread();
      // In short runs: the token counter's byte-pair encoding takes time quadratic in the length of
      // an unbroken run of letters or symbols (100,000 characters of one run take it about an hour).
      const cjk = '字—'.repeat(50_000); // 100,000 characters of 3 bytes each in UTF-8: 300,000
      const emoji = `${'😀a'.repeat(33_333)}a`; // 100,000 as JavaScript counts them (😀 is two): 600,000 bytes escaped
      const blocks = [cjk, cjk, cjk].map((text) => ({ type: 'text', text })); // 900,000 bytes: within the HTTP body limit
      const escapedFrame = `{"type":"message.send","threadId":"${threadId}","content":"${escaped(emoji)}","requestId":"escaped"}`;
      expect(Buffer.byteLength(escapedFrame)).toBeGreaterThan(600_000);
      // Over HTTP, each is taken.
      for (const body of [JSON.stringify({ content: cjk }), `{"content":"${escaped(emoji)}"}`, JSON.stringify({ content: blocks })]) {
        const response = await server.request('POST', `/api/threads/${threadId}/messages`, { rawBody: body, headers: { 'content-type': 'application/json' } });
        expect(response.status).toBe(200);
      }
      const { socket, frames, send } = await openSocket(server, ALICE.token);
      send({ type: 'message.send', threadId, content: cjk, requestId: 'raw' });
      send(escapedFrame);
      send({ type: 'message.send', threadId, content: blocks, requestId: 'blocks' });
      const answered = () => frames.filter((frame) => frame.type === 'message.accepted' || frame.type === 'error');
      await waitFor(() => answered().length >= 3, 20_000, 'an answer to each');
      expect(answered().map((frame) => (frame.type === 'error' ? frame.code : frame.requestId)).sort()).toEqual(['blocks', 'escaped', 'raw']);
      const answers = ['raw', 'escaped', 'blocks'].map((requestId) => frameFor(frames, requestId)!);
      await waitFor(() => answers.every((answer) => runEnded(frames, answer.runId)), 60_000, 'their runs');
      socket.close();
      const history = await server.request('GET', `/api/threads/${threadId}/history?limit=100`);
      const stored = new Map(history.body.messages.map((message: Frame) => [message.id, message.content]));
      expect(answers.map((answer) => stored.get(answer.messageId))).toEqual([cjk, emoji, blocks]);

      // I12: as large a frame into another user's thread is read, and refused as that: never accepted.
      const bob = await openSocket(server, BOB.token);
      bob.send(escapedFrame);
      await waitFor(() => bob.frames.length > 0, 10_000, "the answer to bob's frame");
      bob.socket.close();
      expect(bob.frames).toEqual([expect.objectContaining({ type: 'error', code: 'THREAD_NOT_FOUND', threadId, requestId: 'escaped' })]);
      expect((await server.request('GET', `/api/threads/${threadId}/history?limit=100`)).body.messages).toHaveLength(history.body.messages.length);
    });

    it('a frame of the limit\'s size (the HTTP body limit and room for the frame\'s fields) is read; one byte more is refused with BODY_TOO_LARGE, and the connection goes on', async () => {
      const threadId = await newThread();
      const limit = maxFrameBytes(server.app.initialConfig.bodyLimit!);
      expect(limit).toBeGreaterThan(server.app.initialConfig.bodyLimit!);
      const frame = (size: number, requestId: string) => {
        const json = JSON.stringify({ type: 'message.send', threadId, content: 'padded', requestId });
        return `${json.slice(0, -1)}${' '.repeat(size - Buffer.byteLength(json))}}`; // JSON whitespace, up to the size
      };
      const { socket, frames, send } = await openSocket(server, ALICE.token);
      send(frame(limit + 1, 'over'));
      send(frame(limit, 'at'));
      await waitFor(() => frames.some((item) => item.type === 'error') && frameFor(frames, 'at') !== undefined, 20_000, 'both answered');
      expect(frames.find((item) => item.type === 'error')).toMatchObject({ code: 'BODY_TOO_LARGE', message: `frames are limited to ${limit} bytes` });
      const accepted = frameFor(frames, 'at')!;
      expect(accepted).toMatchObject({ type: 'message.accepted', threadId });
      await waitFor(() => runEnded(frames, accepted.runId), 20_000, 'its run');
      socket.close();
      const history = await server.request('GET', `/api/threads/${threadId}/history`);
      expect(history.body.messages.filter((message: Frame) => message.role === 'user').map((message: Frame) => message.content)).toEqual(['padded']);
    });
  });
}
