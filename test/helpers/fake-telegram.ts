import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A fake Telegram Bot API on loopback, for grammY's `client.apiRoot`: getMe,
 * sendMessage, getUpdates (long polling with offsets), setWebhook and deleteWebhook.
 * Every call is recorded; a test pushes updates and reads what the bot sent.
 */

export interface FakeTelegramCall {
  method: string;
  /** What the fake answered (sendMessage: the sent message, with its message_id). */
  result?: Record<string, any>;
  payload: Record<string, any>;
  at: number;
}

export interface FakeTelegramOptions {
  token: string;
  /** Like Telegram: a getUpdates while another is still open is a conflict (409 to the older one, counted). */
  onePoller?: boolean;
  botId?: number;
  username?: string;
  /** Methods whose requests are cut off unanswered (the connection is destroyed): a network failure as the bot sees it. */
  hangUp?: readonly string[];
}

interface Waiter {
  offset: number;
  respond: (updates: unknown[]) => void;
  conflict: () => void;
  timer: NodeJS.Timeout;
}

export class FakeTelegram {
  readonly calls: FakeTelegramCall[] = [];
  /** getUpdates requests that overlapped another (two pollers at once), with onePoller. */
  conflicts = 0;
  readonly botId: number;
  private readonly server: Server;
  private readonly updates: Array<Record<string, any>> = [];
  private readonly waiters = new Set<Waiter>();
  private nextUpdateId = 1000;
  private nextMessageId = 5000;
  private port = 0;

  private constructor(private readonly options: FakeTelegramOptions) {
    this.botId = options.botId ?? Number(options.token.split(':')[0]);
    this.server = createServer((request, response) => void this.handle(request, response));
  }

  static async start(options: FakeTelegramOptions): Promise<FakeTelegram> {
    const fake = new FakeTelegram(options);
    await new Promise<void>((resolve) => fake.server.listen(0, '127.0.0.1', resolve));
    fake.port = (fake.server.address() as AddressInfo).port;
    return fake;
  }

  /** For VIGIL_TELEGRAM_API_ROOT. */
  get apiRoot(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** A person writes in a chat; returns the update (also served by getUpdates). */
  pushMessage(message: { chatId: number; text: string; chatType?: string; fromId?: number }): Record<string, any> {
    const update = this.textUpdate(message);
    this.updates.push(update);
    this.release();
    return update;
  }

  /** An update as Telegram would POST it to a webhook (not queued for getUpdates). */
  textUpdate(message: { chatId: number; text: string; chatType?: string; fromId?: number }): Record<string, any> {
    const fromId = message.fromId ?? Math.abs(message.chatId);
    return {
      update_id: this.nextUpdateId++,
      message: {
        message_id: this.nextMessageId++,
        date: Math.floor(Date.now() / 1000),
        chat: { id: message.chatId, type: message.chatType ?? 'private', first_name: 'Ada' },
        from: { id: fromId, is_bot: false, first_name: 'Ada', language_code: 'en' },
        text: message.text,
      },
    };
  }

  /** A person presses an inline button under one of the bot's messages. */
  pushButton(press: { chatId: number; fromId?: number; messageId: number; text?: string; data: string; chatType?: string }): Record<string, any> {
    const update = {
      update_id: this.nextUpdateId++,
      callback_query: {
        id: `cb-${this.nextUpdateId}`,
        from: { id: press.fromId ?? Math.abs(press.chatId), is_bot: false, first_name: 'Ada' },
        message: { message_id: press.messageId, date: Math.floor(Date.now() / 1000), chat: { id: press.chatId, type: press.chatType ?? 'private' }, text: press.text ?? '' },
        chat_instance: '1',
        data: press.data,
      },
    };
    this.updates.push(update);
    this.release();
    return update;
  }

  callsOf(method: string): FakeTelegramCall[] {
    return this.calls.filter((call) => call.method === method);
  }

  /** Texts the bot sent to a chat, in order. */
  sentTo(chatId: number): Array<Record<string, any>> {
    return this.callsOf('sendMessage')
      .map((call) => call.payload)
      .filter((payload) => Number(payload.chat_id) === chatId);
  }

  async close(): Promise<void> {
    for (const waiter of this.waiters) {
      clearTimeout(waiter.timer);
      waiter.respond([]);
    }
    this.waiters.clear();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const match = /^\/bot([^/]+)\/(\w+)$/.exec(request.url?.split('?')[0] ?? '');
    const body = await readBody(request);
    if (!match) return reply(response, 404, { ok: false, error_code: 404, description: 'Not Found' });
    const [, token, method] = match as unknown as [string, string, string];
    if (token !== this.options.token) return reply(response, 401, { ok: false, error_code: 401, description: 'Unauthorized' });
    const payload = body ? (JSON.parse(body) as Record<string, any>) : {};
    this.calls.push({ method, payload, at: Date.now() });
    if (this.options.hangUp?.includes(method)) {
      request.socket.destroy();
      return;
    }
    switch (method) {
      case 'getMe':
        return reply(response, 200, { ok: true, result: { id: this.botId, is_bot: true, first_name: 'Vigil Test', username: this.options.username ?? 'vigil_test_bot', can_join_groups: true, can_read_all_group_messages: false, supports_inline_queries: false } });
      case 'sendMessage': {
        const result = { message_id: this.nextMessageId++, date: Math.floor(Date.now() / 1000), chat: { id: payload.chat_id, type: 'private' }, from: { id: this.botId, is_bot: true, first_name: 'Vigil Test' }, text: payload.text };
        this.calls[this.calls.length - 1]!.result = result;
        return reply(response, 200, { ok: true, result });
      }
      case 'answerCallbackQuery':
      case 'editMessageText':
      case 'setWebhook':
      case 'deleteWebhook':
        return reply(response, 200, { ok: true, result: true });
      case 'getUpdates':
        return this.getUpdates(payload, response);
      default:
        return reply(response, 404, { ok: false, error_code: 404, description: `Not Found: method ${method}` });
    }
  }

  // Long polling: answer at once when updates at or after the offset are queued, else hold
  // the request until one arrives or the timeout passes.
  private getUpdates(payload: Record<string, any>, response: ServerResponse): void {
    const offset = typeof payload.offset === 'number' ? payload.offset : 0;
    // Telegram forgets updates before the offset: they were confirmed.
    while (this.updates.length > 0 && (this.updates[0]?.update_id ?? 0) < offset) this.updates.shift();
    const respond = (updates: unknown[]) => {
      if (!response.writableEnded) reply(response, 200, { ok: true, result: updates });
    };
    if (this.options.onePoller && this.waiters.size > 0) {
      // Telegram ends the older request: "Conflict: terminated by other getUpdates request".
      this.conflicts += 1;
      for (const waiter of [...this.waiters]) {
        clearTimeout(waiter.timer);
        this.waiters.delete(waiter);
        waiter.conflict();
      }
    }
    const ready = this.updates.filter((update) => update.update_id >= offset);
    const timeoutSeconds = typeof payload.timeout === 'number' ? payload.timeout : 0;
    if (ready.length > 0 || timeoutSeconds === 0) return respond(ready.slice(0, payload.limit ?? 100));
    const waiter: Waiter = {
      offset,
      respond: (updates) => {
        this.waiters.delete(waiter);
        respond(updates);
      },
      conflict: () => {
        if (!response.writableEnded) reply(response, 409, { ok: false, error_code: 409, description: 'Conflict: terminated by other getUpdates request; make sure that only one bot instance is running' });
      },
      timer: setTimeout(() => waiter.respond([]), timeoutSeconds * 1000),
    };
    this.waiters.add(waiter);
    response.on('close', () => {
      clearTimeout(waiter.timer);
      this.waiters.delete(waiter);
    });
  }

  private release(): void {
    for (const waiter of [...this.waiters]) {
      const ready = this.updates.filter((update) => update.update_id >= waiter.offset);
      if (ready.length === 0) continue;
      clearTimeout(waiter.timer);
      waiter.respond(ready);
    }
  }
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

function reply(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
}
