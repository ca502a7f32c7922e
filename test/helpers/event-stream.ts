/**
 * A client of `GET /api/threads/{id}/events`: reads server-sent events as they arrive
 * (each with its `id:`), until `close()`. Resolves once the server acknowledged the
 * subscription (its first comment), so a test never sleeps to be sure it is listening.
 */
export interface StreamedEvent {
  id: number | undefined;
  event: string;
  data: Record<string, any>;
}

export interface EventStream {
  status: number;
  events: StreamedEvent[];
  close(): void;
}

export async function openEventStream(baseUrl: string, threadId: string, options: { token?: string; lastEventId?: number; after?: number } = {}): Promise<EventStream> {
  const controller = new AbortController();
  const headers: Record<string, string> = { accept: 'text/event-stream' };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.lastEventId !== undefined) headers['last-event-id'] = String(options.lastEventId);
  const query = options.after !== undefined ? `?after=${options.after}` : '';
  const response = await fetch(`${baseUrl}/api/threads/${threadId}/events${query}`, { headers, signal: controller.signal });
  const events: StreamedEvent[] = [];
  if (response.status !== 200 || !response.body) {
    await response.text().catch(() => undefined);
    return { status: response.status, events, close: () => controller.abort() };
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let acknowledged!: () => void;
  const subscribed = new Promise<void>((resolve) => (acknowledged = resolve));
  void (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (block.startsWith(':')) {
            acknowledged();
            continue;
          }
          const id = /^id: (\d+)$/m.exec(block)?.[1];
          const event = /^event: (.*)$/m.exec(block)?.[1] ?? '';
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (data !== undefined) events.push({ id: id === undefined ? undefined : Number(id), event, data: JSON.parse(data) as Record<string, any> });
        }
      }
    } catch {
      // aborted by close()
    }
    acknowledged();
  })();
  await subscribed;
  return { status: 200, events, close: () => controller.abort() };
}
