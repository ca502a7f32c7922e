import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HumanMessage, type BaseMessage } from '@langchain/core/messages';
import type { SqlStorage } from '../../src/adapters/sql/sql-storage.js';
import type { TelegramTables } from '../../src/adapters/sql/telegram-tables.js';
import { ENVELOPE_KEY } from '../../src/domain/envelope/build-envelope.js';
import { ENVELOPE_KWARG } from '../../src/domain/envelope/envelope-marker.js';
import { syntheticMetadata, TRIGGER_PROMPTS } from '../../src/domain/message-metadata.js';
import { FakeTelegram } from '../helpers/fake-telegram.js';
import { RecordingModel } from '../helpers/recording-model.js';
import { ALICE, startTestServer, type Backend, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';

const TOKEN = '7000000001:AAFakeTokenForTests_0123456789abcdefghij';
const WEBHOOK_SECRET = 'telegram-webhook-secret-0123456789';

/** The Telegram channel against a fake Bot API on loopback, on each storage backend. */
export function telegramSuite(backend: () => Backend): void {
  function marked(messages: readonly BaseMessage[]): BaseMessage[] {
    return messages.filter((message) => Object.hasOwn(message.additional_kwargs, ENVELOPE_KWARG));
  }

  async function chatThreadId(server: TestServer, chatId: number): Promise<string> {
    const row = await (server.storage as SqlStorage).context.db
      .withTables<TelegramTables>()
      .selectFrom('telegram_chats')
      .select('thread_id')
      .where('chat_id', '=', chatId)
      .executeTakeFirstOrThrow();
    return row.thread_id;
  }

  async function visibleAssistantReplies(server: TestServer, threadId: string): Promise<string[]> {
    const history = await server.request('GET', `/api/threads/${threadId}/history?limit=200`);
    return history.body.messages.filter((message: { role: string }) => message.role === 'assistant').map((message: { content: string }) => message.content);
  }

  /** Wait until the condition holds, then a little longer to see that nothing more arrives. */
  async function settle(condition: () => boolean): Promise<void> {
    await waitFor(condition);
    await new Promise((resolve) => setTimeout(resolve, 300));
  }

  describe('long polling', () => {
    let fake: FakeTelegram;
    let server: TestServer;
    const model = new RecordingModel(['Hello from vigil.', 'A second answer.', 'Following up, as promised.', 'Answer over HTTP.']);

    beforeAll(async () => {
      fake = await FakeTelegram.start({ token: TOKEN });
      server = await startTestServer(backend(), {
        models: () => model,
        environment: { VIGIL_TELEGRAM_BOT_TOKEN: TOKEN, VIGIL_TELEGRAM_API_ROOT: fake.apiRoot, VIGIL_TELEGRAM_USER: ALICE.id, VIGIL_TELEGRAM_MODE: 'polling' },
      });
      await waitFor(() => fake.callsOf('getUpdates').length > 0);
    });
    afterAll(async () => {
      await server?.destroy();
      await fake?.close();
    });

    it('a message in starts a channel run; the reply goes out to the chat, answering that message', async () => {
      const chatId = 4242;
      const update = fake.pushMessage({ chatId, text: 'Hi bot, what is up?' });
      await waitFor(() => fake.sentTo(chatId).length === 1);
      const [sent] = fake.sentTo(chatId);
      expect(sent).toMatchObject({ chat_id: chatId, text: 'Hello from vigil.', reply_parameters: { message_id: update.message.message_id } });

      const threadId = await chatThreadId(server, chatId);
      // The reply leaves on message.end, a moment before the run record is closed.
      let runs: any[] = [];
      await waitFor(async () => {
        runs = (await server.request('GET', `/api/threads/${threadId}/runs`)).body.runs;
        return runs[0]?.status !== 'running';
      });
      expect(runs).toHaveLength(1);
      expect(runs[0]).toMatchObject({ trigger: 'channel', status: 'succeeded' });
      expect(runs[0].meta).toEqual({
        trigger: 'channel',
        run_id: runs[0].id,
        requested_at_utc: runs[0].requestedAt,
        correlation_id: `telegram-${fake.botId}-${update.update_id}`,
        channel: 'telegram',
        chat_id: chatId,
        message_id: update.message.message_id,
        chat_type: 'private',
        from_user_id: chatId,
      });

      // A person spoke: a real, visible user message, not a synthetic one (I1).
      const history = await server.request('GET', `/api/threads/${threadId}/history?include=internal`);
      expect(history.body.messages.map((message: { role: string; visibility: string }) => [message.role, message.visibility])).toEqual([
        ['user', 'user'],
        ['assistant', 'user'],
      ]);
      expect(history.body.messages[0]).toMatchObject({ content: 'Hi bot, what is up?', additionalKwargs: {} });
      const thread = await server.request('GET', `/api/threads/${threadId}`);
      expect(thread.body.lastUserActivityAt).not.toBeNull();

      // The model saw the channel envelope right before the person's message.
      const seen = model.calls.find((call) => call.at(-1)?.content === 'Hi bot, what is up?')!;
      const envelopes = marked(seen);
      expect(envelopes).toHaveLength(1);
      expect(seen.indexOf(envelopes[0]!)).toBe(seen.length - 2);
      const body = (JSON.parse(String(envelopes[0]!.content)) as Record<string, Record<string, unknown>>)[ENVELOPE_KEY];
      expect(body).toMatchObject({ trigger: 'channel', channel: 'telegram', chat_id: chatId, chat_type: 'private' });
    });

    it('each chat maps to one thread; a chat\'s next message continues it', async () => {
      const chatId = 5151;
      fake.pushMessage({ chatId, text: 'first' });
      await waitFor(() => fake.sentTo(chatId).length === 1);
      fake.pushMessage({ chatId, text: 'second' });
      await waitFor(() => fake.sentTo(chatId).length === 2);
      const threadId = await chatThreadId(server, chatId);
      const history = await server.request('GET', `/api/threads/${threadId}/history`);
      expect(history.body.messages.filter((message: { role: string }) => message.role === 'user').map((message: { content: string }) => message.content)).toEqual(['first', 'second']);
      expect(threadId).not.toBe(await chatThreadId(server, 4242));
      const group = -1001234567890;
      fake.pushMessage({ chatId: group, text: 'hello group', chatType: 'supergroup', fromId: 77 });
      await waitFor(() => fake.sentTo(group).length === 1);
      const groupRuns = (await server.request('GET', `/api/threads/${await chatThreadId(server, group)}/runs`)).body.runs;
      expect(groupRuns[0].meta).toMatchObject({ chat_id: group, chat_type: 'supergroup', from_user_id: 77 });
    });

    it('every visible assistant reply of a telegram thread reaches the chat exactly once: follow-ups and HTTP runs too', async () => {
      const chatId = 6363;
      fake.pushMessage({ chatId, text: 'remind me later' });
      await waitFor(() => fake.sentTo(chatId).length === 1);
      const threadId = await chatThreadId(server, chatId);

      // An autonomous follow-up on the mapped thread, through the path timers use.
      const input = new HumanMessage({ content: TRIGGER_PROMPTS.check_in, additional_kwargs: syntheticMetadata('check_in', 'test: silence') });
      const followUp = await server.services.conversations.runTriggered(ALICE.id, threadId, { trigger: 'autonomy', input, meta: { trigger_type: 'check_in', timer_id: 'tmr_test' } });
      expect(followUp.run.status).toBe('succeeded');
      await settle(() => fake.sentTo(chatId).length === 2);
      const followUpText = followUp.messages.find((message) => message.type === 'ai')?.content;
      expect(fake.sentTo(chatId)[1]).toMatchObject({ text: followUpText });
      expect(fake.sentTo(chatId)[1]).not.toHaveProperty('reply_parameters'); // it answers no chat message
      expect(JSON.stringify(fake.calls)).not.toContain(TRIGGER_PROMPTS.check_in); // the synthetic prompt never goes out

      // The owner writes over HTTP on the same thread: the answer goes to the chat too.
      const viaHttp = await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'from the web' } });
      expect(viaHttp.status).toBe(200);
      await settle(() => fake.sentTo(chatId).length === 3);

      const replies = await visibleAssistantReplies(server, threadId);
      expect(fake.sentTo(chatId).map((payload) => payload.text)).toEqual(replies);
    });

    it('after a restart nothing is sent twice, and the chat goes on in its thread', async () => {
      const chatId = 6363;
      const threadId = await chatThreadId(server, chatId);
      const sentBefore = fake.callsOf('sendMessage').length;
      const pollsBefore = fake.callsOf('getUpdates').length;
      server = await server.restart();
      await waitFor(() => fake.callsOf('getUpdates').length > pollsBefore + 1);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(fake.callsOf('sendMessage')).toHaveLength(sentBefore);
      fake.pushMessage({ chatId, text: 'back again' });
      await settle(() => fake.sentTo(chatId).length === 4);
      expect(await chatThreadId(server, chatId)).toBe(threadId);
      expect(fake.sentTo(chatId).map((payload) => payload.text)).toEqual(await visibleAssistantReplies(server, threadId));
    });

    it('stores the chat mapping once, with the position of the last handed-over message', async () => {
      const rows = await (server.storage as SqlStorage).context.db.withTables<TelegramTables>().selectFrom('telegram_chats').selectAll().where('chat_id', '=', 6363).execute();
      expect(rows).toHaveLength(1);
      const thread = await server.request('GET', `/api/threads/${rows[0]!.thread_id}?`);
      expect(thread.status).toBe(200);
      expect(Number(rows[0]!.sent_seq)).toBeGreaterThanOrEqual(5);
    });
  });

  describe('webhook mode', () => {
    let fake: FakeTelegram;
    let server: TestServer;
    const allowedChat = 8080;
    const model = new RecordingModel(['Webhook reply.']);

    beforeAll(async () => {
      fake = await FakeTelegram.start({ token: TOKEN });
      server = await startTestServer(backend(), {
        models: () => model,
        environment: {
          VIGIL_TELEGRAM_BOT_TOKEN: TOKEN,
          VIGIL_TELEGRAM_API_ROOT: fake.apiRoot,
          VIGIL_TELEGRAM_USER: ALICE.id,
          VIGIL_TELEGRAM_MODE: 'webhook',
          VIGIL_TELEGRAM_WEBHOOK_SECRET: WEBHOOK_SECRET,
          VIGIL_TELEGRAM_WEBHOOK_URL: 'https://vigil.example.com/api/channels/telegram/webhook',
          VIGIL_TELEGRAM_ALLOWED_CHATS: `${allowedChat}, 9090`,
        },
      });
      await waitFor(() => fake.callsOf('setWebhook').length > 0);
    });
    afterAll(async () => {
      await server?.destroy();
      await fake?.close();
    });

    const post = (update: unknown, secret: string | null) =>
      server.request('POST', '/api/channels/telegram/webhook', { token: '', body: update, headers: secret === null ? {} : { 'x-telegram-bot-api-secret-token': secret } });

    async function aliceThreadCount(): Promise<number> {
      return (await server.request('GET', '/api/threads?limit=100')).body.threads.length;
    }

    it('registers the webhook with its secret and never polls', () => {
      expect(fake.callsOf('setWebhook')[0]?.payload).toMatchObject({ url: 'https://vigil.example.com/api/channels/telegram/webhook', secret_token: WEBHOOK_SECRET });
      expect(fake.callsOf('getUpdates')).toEqual([]);
    });

    it('I11: a wrong or missing secret header is refused with 401 and starts nothing', async () => {
      const before = await aliceThreadCount();
      for (const secret of ['wrong-secret-0123456789', '', null, `${WEBHOOK_SECRET}x`]) {
        const response = await post(fake.textUpdate({ chatId: allowedChat, text: 'let me in' }), secret);
        expect(response.status, String(secret)).toBe(401);
        expect(response.body.error.code).toBe('TELEGRAM_SECRET_INVALID');
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(await aliceThreadCount()).toBe(before);
      expect(fake.callsOf('sendMessage')).toEqual([]);
      const chats = await (server.storage as SqlStorage).context.db.withTables<TelegramTables>().selectFrom('telegram_chats').selectAll().execute();
      expect(chats).toEqual([]);
    });

    it('the right secret: an update starts a run and the reply goes out; a redelivered update starts nothing', async () => {
      const update = fake.textUpdate({ chatId: allowedChat, text: 'hello over the webhook' });
      const response = await post(update, WEBHOOK_SECRET);
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ ok: true });
      await waitFor(() => fake.sentTo(allowedChat).length === 1);
      expect(fake.sentTo(allowedChat)[0]).toMatchObject({ text: 'Webhook reply.' });
      expect((await post(update, WEBHOOK_SECRET)).status).toBe(200); // Telegram retrying
      await new Promise((resolve) => setTimeout(resolve, 300));
      const runs = (await server.request('GET', `/api/threads/${await chatThreadId(server, allowedChat)}/runs`)).body.runs;
      expect(runs).toHaveLength(1);
      expect(fake.sentTo(allowedChat)).toHaveLength(1);
    });

    it('a chat outside VIGIL_TELEGRAM_ALLOWED_CHATS is not answered', async () => {
      const before = await aliceThreadCount();
      expect((await post(fake.textUpdate({ chatId: 1234, text: 'stranger' }), WEBHOOK_SECRET)).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(await aliceThreadCount()).toBe(before);
      expect(fake.sentTo(1234)).toEqual([]);
    });

    it('I11: a malformed update with the right secret is refused with 400, and starts nothing', async () => {
      const response = await post({ message: { text: 'no update id' } }, WEBHOOK_SECRET);
      expect(response.status).toBe(400);
      expect(response.body.error.code).toBe('VALIDATION_FAILED');
      // An update id, but a message vigil cannot read (no message_id, a chat that is no chat): 400 too, not 500.
      const before = await aliceThreadCount();
      const unreadable = await post({ update_id: 9_001, message: { chat: 'nope', text: 'hi' } }, WEBHOOK_SECRET);
      expect(unreadable.status).toBe(400);
      expect(unreadable.body.error.code).toBe('VALIDATION_FAILED');
      expect(unreadable.body.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ path: '/message/message_id' })]));
      expect(await aliceThreadCount()).toBe(before); // refused before the channel takes it: nothing to wait for
    });
  });
}
