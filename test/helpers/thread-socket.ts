import { WebSocket } from 'ws';
import { ALICE } from './test-server.js';
import { waitFor } from './wait-for.js';

type Json = Record<string, any>;

/**
 * A WebSocket subscribed to one thread, collecting every event. Resolves once the server
 * acknowledged the subscription (`thread.subscribed`): every later event of the thread
 * reaches `events`, so a test never sleeps to be sure it is listening.
 */
export async function subscribeToThread(server: { url: string }, threadId: string, token: string = ALICE.token): Promise<{ events: Json[]; socket: WebSocket }> {
  const { socket, frames: events } = await openSocket(server, token);
  socket.send(JSON.stringify({ type: 'thread.subscribe', threadId }));
  await waitFor(() => events.some((event) => event.type === 'thread.subscribed' && event.threadId === threadId), 10_000, 'the subscription acknowledgement');
  return { events, socket };
}

/** An open WebSocket on /api/ws collecting every frame the server sends. */
export async function openSocket(server: { url: string }, token: string): Promise<{ socket: WebSocket; frames: Json[]; send: (frame: unknown) => void }> {
  const socket = new WebSocket(`${server.url.replace('http', 'ws')}/api/ws?token=${token}`);
  await new Promise((resolve, reject) => {
    socket.once('open', resolve);
    socket.once('error', reject);
  });
  const frames: Json[] = [];
  socket.on('message', (data) => frames.push(JSON.parse(String(data)) as Json));
  return { socket, frames, send: (frame) => socket.send(typeof frame === 'string' ? frame : JSON.stringify(frame)) };
}
