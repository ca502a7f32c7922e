import { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEventStream, type StreamedEvent } from '../helpers/event-stream.js';
import { ALICE, BOB, startTestServer, type Backend, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';

const increasing = (ids: Array<number | undefined>) => ids.every((id, index) => id !== undefined && (index === 0 || id > ids[index - 1]!));
const runEnds = (events: StreamedEvent[]) => events.filter((event) => event.event === 'run.end').length;

/** GET /api/threads/{id}/events and WebSocket resumption (I15), on one instance of either backend. */
export function threadEventsSuite(backend: () => Backend): void {
  describe('thread events: a resumable stream of every event of a thread', () => {
    let server: TestServer;
    let threadId: string;

    beforeAll(async () => {
      server = await startTestServer(backend());
      expect((await server.request('POST', '/api/agents', { body: { id: 'streamer', name: 'Streamer' } })).status).toBe(201);
      threadId = (await server.request('POST', '/api/threads', { body: { agentId: 'streamer' } })).body.id as string;
    });
    afterAll(async () => {
      await server?.destroy();
    });

    it('I15: streams a run\'s events with growing ids; a reconnect with Last-Event-ID gets exactly what it missed, in order, then live events', async () => {
      const first = await openEventStream(server.url, threadId, { token: ALICE.token });
      expect((await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'Hello there' } })).status).toBe(200);
      await waitFor(() => runEnds(first.events) >= 1, 20_000, 'the first run on the stream');
      first.close();
      const types = first.events.map((event) => event.event);
      expect(types[0]).toBe('run.start');
      expect(types).toContain('message.end');
      expect(types.at(-1)).toBe('run.end');
      expect(increasing(first.events.map((event) => event.id))).toBe(true);
      expect(first.events.every((event) => event.data.eventId === event.id && event.data.threadId === threadId)).toBe(true);

      // The client was away for a whole run.
      const lastSeen = first.events.at(-1)!.id!;
      const second = await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'And again' } });
      const missedRunId = second.body.run.id as string;
      const resumed = await openEventStream(server.url, threadId, { token: ALICE.token, lastEventId: lastSeen });
      await waitFor(() => runEnds(resumed.events) >= 1, 20_000, 'the missed run, replayed');
      expect(resumed.events.every((event) => event.data.runId === missedRunId)).toBe(true);
      expect(resumed.events[0]!.event).toBe('run.start');
      expect(resumed.events[0]!.id).toBeGreaterThan(lastSeen);
      // Then live: a third run arrives on the same stream, after the replay, nothing twice.
      await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'Third' } });
      await waitFor(() => runEnds(resumed.events) >= 2, 20_000, 'the live run after the replay');
      resumed.close();
      const ids = resumed.events.map((event) => event.id);
      expect(increasing(ids)).toBe(true);
      expect(new Set(ids).size).toBe(ids.length);

      // ?after= is the same as the header (for EventSource clients that cannot set it).
      const byQuery = await openEventStream(server.url, threadId, { token: ALICE.token, after: lastSeen });
      await waitFor(() => runEnds(byQuery.events) >= 2, 20_000, 'the replay by query');
      byQuery.close();
      expect(byQuery.events.map((event) => event.id)).toEqual(ids);
    });

    it('I12: another user\'s thread is a 404; a malformed Last-Event-ID is a 400', async () => {
      expect((await openEventStream(server.url, threadId, { token: BOB.token })).status).toBe(404);
      expect((await openEventStream(server.url, threadId, { token: BOB.token, lastEventId: 0 })).status).toBe(404);
      const malformed = await server.request('GET', `/api/threads/${threadId}/events`, { headers: { 'last-event-id': 'yesterday' } });
      expect(malformed.status).toBe(400);
      expect(malformed.body.error.code).toBe('VALIDATION_FAILED');
    });

    it('I15: a WebSocket subscription resumes after an event id; every thread event carries its eventId', async () => {
      const before = await openEventStream(server.url, threadId, { token: ALICE.token });
      const sent = await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'For the socket' } });
      await waitFor(() => before.events.some((event) => event.event === 'run.end' && event.data.runId === sent.body.run.id), 20_000, 'the run on the stream');
      before.close();
      const runEvents = before.events.filter((event) => event.data.runId === sent.body.run.id);
      const startId = runEvents[0]!.id!;

      const socket = new WebSocket(`${server.url.replace('http', 'ws')}/api/ws?token=${ALICE.token}`);
      await new Promise((resolve, reject) => {
        socket.once('open', resolve);
        socket.once('error', reject);
      });
      const frames: Array<Record<string, any>> = [];
      socket.on('message', (data) => frames.push(JSON.parse(String(data)) as Record<string, any>));
      socket.send(JSON.stringify({ type: 'thread.subscribe', threadId, afterEventId: startId - 1 }));
      await waitFor(() => frames.some((frame) => frame.type === 'run.end' && frame.runId === sent.body.run.id), 20_000, 'the replay over the socket');
      const replayed = frames.filter((frame) => frame.runId === sent.body.run.id);
      expect(replayed.map((frame) => frame.eventId)).toEqual(runEvents.map((event) => event.id));
      expect(replayed.map((frame) => frame.type)).toEqual(runEvents.map((event) => event.event));

      // Bob cannot resume Alice's thread.
      const bob = new WebSocket(`${server.url.replace('http', 'ws')}/api/ws?token=${BOB.token}`);
      await new Promise((resolve) => bob.once('open', resolve));
      const bobFrames: Array<Record<string, any>> = [];
      bob.on('message', (data) => bobFrames.push(JSON.parse(String(data)) as Record<string, any>));
      bob.send(JSON.stringify({ type: 'thread.subscribe', threadId, afterEventId: 0 }));
      await waitFor(() => bobFrames.length > 0, 10_000, "Bob's answer");
      expect(bobFrames).toEqual([expect.objectContaining({ type: 'error', code: 'THREAD_NOT_FOUND', threadId })]);
      socket.close();
      bob.close();
    });

    it('/readyz names this instance, its database and queue', async () => {
      const ready = await server.request('GET', '/readyz', { token: '' });
      expect(ready.status).toBe(200);
      expect(ready.body.instance).toMatchObject({ id: expect.any(String), queue: backend().kind === 'postgres' ? 'pg-boss; due timers on the job table' : 'embedded', roles: [] });
      expect(ready.body.instance.database).toMatch(backend().kind === 'postgres' ? /^postgresql, schema / : /^sqlite$/);
    });
  });
}
