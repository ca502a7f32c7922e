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
  const socket = new WebSocket(`${server.url.replace('http', 'ws')}/api/ws?token=${token}`);
  await new Promise((resolve, reject) => {
    socket.once('open', resolve);
    socket.once('error', reject);
  });
  const events: Json[] = [];
  socket.on('message', (data) => events.push(JSON.parse(String(data)) as Json));
  socket.send(JSON.stringify({ type: 'thread.subscribe', threadId }));
  await waitFor(() => events.some((event) => event.type === 'thread.subscribed' && event.threadId === threadId), 10_000, 'the subscription acknowledgement');
  return { events, socket };
}
