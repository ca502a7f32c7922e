import { randomUUID } from 'node:crypto';
import { get, type IncomingMessage, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { ALICE, BOB, startTestServer, type Backend, type TestServer } from '../helpers/test-server.js';
import { subscribeToThread } from '../helpers/thread-socket.js';
import { waitFor } from '../helpers/wait-for.js';

type Json = Record<string, any>;

/**
 * Live streams (WebSocket and SSE) end with their thread and with their connection, and a
 * client that stops reading is let go instead of being buffered for without bound.
 */
export function liveDeliverySuite(backend: () => Backend): void {
  describe('live delivery', () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer(backend());
    });
    afterAll(async () => {
      await server?.destroy();
    });

    const newThread = async (token = ALICE.token) => (await server.request('POST', '/api/threads', { token, body: {} })).body.id as string;
    const send = async (threadId: string, content: string, token = ALICE.token) => {
      const sent = await server.request('POST', `/api/threads/${threadId}/messages`, { token, body: { content } });
      expect(sent.status).toBe(200);
      return sent.body.run.id as string;
    };
    /** Every event the bus sent a socket before `runId`'s run.end on another of its threads has reached it (one connection keeps order). */
    const barrier = async (events: Json[], threadId: string) => {
      const runId = await send(threadId, 'barrier');
      await waitFor(() => events.some((event) => event.type === 'run.end' && event.runId === runId), 10_000, 'the barrier run to end');
    };
    const openSse = async (threadId: string, token = ALICE.token) => {
      const response = await fetch(`${server.url}/api/threads/${threadId}/events`, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } });
      const reader = response.body!.getReader();
      const stream = { text: '', ended: false };
      void (async () => {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          stream.text += new TextDecoder().decode(value);
        }
        stream.ended = true;
      })().catch(() => {
        stream.ended = true;
      });
      await waitFor(() => stream.text.includes(': subscribed'), 10_000, 'the SSE stream');
      return stream;
    };

    it('I12: a deleted thread ends its streams (thread.deleted), so a thread another user makes with its id does not reach them', async () => {
      const threadId = randomUUID();
      expect((await server.request('POST', '/threads', { body: { thread_id: threadId } })).status).toBe(200);
      const other = await newThread();
      // Alice has the thread open over WebSocket (with another of her threads) and over SSE.
      const alice = await subscribeToThread(server, threadId);
      alice.socket.send(JSON.stringify({ type: 'thread.subscribe', threadId: other }));
      await waitFor(() => alice.events.some((event) => event.type === 'thread.subscribed' && event.threadId === other), 10_000, 'the second subscription');
      const sse = await openSse(threadId);
      try {
        expect((await server.request('DELETE', `/api/threads/${threadId}`)).status).toBe(204);
        await waitFor(() => alice.events.some((event) => event.type === 'thread.deleted' && event.threadId === threadId), 10_000, 'thread.deleted on the socket');
        await waitFor(() => sse.ended, 10_000, 'the SSE stream to end');
        expect(sse.text).toContain('event: thread.deleted');

        // Bob's client picks the same id and talks on it.
        expect((await server.request('POST', '/threads', { token: BOB.token, body: { thread_id: threadId } })).status).toBe(200);
        // A secret no id can contain (ids are hex and dashes), so a random id never matches it.
        await send(threadId, 'my bank PIN is qxzv-4321', BOB.token);
        await barrier(alice.events, other);
        expect(JSON.stringify(alice.events)).not.toContain('qxzv');
      } finally {
        alice.socket.close();
      }
    });

    it('a subscribe overtaken by the socket closing or by an unsubscribe leaves no subscription', async () => {
      const bus = server.services.events;
      const live = new Map<string, number>();
      const subscribe = bus.subscribe.bind(bus);
      bus.subscribe = (threadId, handler, options) => {
        live.set(threadId, (live.get(threadId) ?? 0) + 1);
        const stop = subscribe(threadId, handler, options);
        let stopped = false;
        return () => {
          if (!stopped) live.set(threadId, live.get(threadId)! - 1);
          stopped = true;
          stop();
        };
      };
      try {
        const threadId = await newThread();
        for (let round = 0; round < 10; round += 1) {
          const socket = new WebSocket(`${server.url.replace('http', 'ws')}/api/ws?token=${ALICE.token}`);
          await new Promise((resolve, reject) => {
            socket.once('open', resolve);
            socket.once('error', reject);
          });
          socket.send(JSON.stringify({ type: 'thread.subscribe', threadId }));
          socket.terminate(); // the tab closes right after
        }
        await waitFor(() => (live.get(threadId) ?? 0) === 0 && server.app.websocketServer.clients.size === 0, 10_000, 'every subscription to end with its socket');

        // Subscribe then unsubscribe at once (switching threads in the app): the unsubscribe wins.
        const switched = await newThread();
        const other = await newThread();
        const { socket, events } = await subscribeToThread(server, other);
        try {
          socket.send(JSON.stringify({ type: 'thread.subscribe', threadId: switched }));
          socket.send(JSON.stringify({ type: 'thread.unsubscribe', threadId: switched }));
          await waitFor(() => (live.get(switched) ?? 0) === 0, 10_000, 'no subscription to the thread left');
          await send(switched, 'hello');
          await barrier(events, other);
          expect(events.filter((event) => event.threadId === switched && event.type !== 'thread.subscribed')).toEqual([]);
        } finally {
          socket.close();
        }
      } finally {
        bus.subscribe = subscribe;
      }
    });

    it('a WebSocket client that stops reading is closed once far behind, not buffered for without bound', async () => {
      const threadId = await newThread();
      const { socket } = await subscribeToThread(server, threadId);
      (socket as unknown as { _socket: { pause(): void } })._socket.pause();
      const [serverSide] = [...server.app.websocketServer.clients];
      const chunk = 'x'.repeat(64 * 1024);
      for (let index = 0; index < 1_000; index += 1) {
        server.services.events.publish({ type: 'message.delta', threadId, runId: 'r', at: new Date().toISOString(), messageId: 'm', delta: chunk });
      }
      try {
        await waitFor(() => serverSide!.readyState !== serverSide!.OPEN, 10_000, 'the server to let the slow client go');
        expect(serverSide!.bufferedAmount).toBeLessThan(8 * 1024 * 1024);
      } finally {
        socket.terminate();
      }
    });

    it('an SSE client of the thread events that stops reading is dropped once far behind', async () => {
      const threadId = await newThread();
      let serverSide: ServerResponse | undefined;
      const capture = (request: IncomingMessage, response: ServerResponse) => {
        if (request.url?.startsWith(`/api/threads/${threadId}/events`)) serverSide = response;
      };
      server.app.server.on('request', capture);
      const response = await new Promise<IncomingMessage>((resolve) => {
        get(`${server.url}/api/threads/${threadId}/events`, { headers: { authorization: `Bearer ${ALICE.token}`, accept: 'text/event-stream' } }, resolve);
      });
      response.pause();
      try {
        await waitFor(() => serverSide !== undefined, 10_000, 'the stream');
        const chunk = 'x'.repeat(64 * 1024);
        for (let index = 0; index < 1_000; index += 1) {
          server.services.events.publish({ type: 'message.delta', threadId, runId: 'r', at: new Date().toISOString(), messageId: 'm', delta: chunk });
        }
        await waitFor(() => serverSide!.destroyed, 10_000, 'the server to drop the slow client');
      } finally {
        server.app.server.off('request', capture);
        response.destroy();
      }
    });
  });
}
