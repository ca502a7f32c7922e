/**
 * Approvals through Telegram (issue 16, part 3): a thread owned by a Telegram chat gets
 * its approval requests as a message with Approve / Reject buttons; only the chat's person
 * decides; the message is edited to show the outcome. A fake Bot API and the scripted
 * OpenAI-compatible server, both on loopback.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { SqlStorage } from '../../src/adapters/sql/sql-storage.js';
import type { TelegramTables } from '../../src/adapters/sql/telegram-tables.js';
import { FakeTelegram } from '../helpers/fake-telegram.js';
import { ScriptedOpenAiServer } from '../helpers/openai-server.js';
import { ALICE, startTestServer, type Backend, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';

const TOKEN = '7000000002:AAFakeTokenForTests_0123456789abcdefghij';

export function telegramApprovalsSuite(backend: () => Backend, options: { slowMs: number }): void {
  let fake: FakeTelegram;
  let model: ScriptedOpenAiServer;
  let server: TestServer;
  const waitLong = 20_000 + options.slowMs * 10;

  beforeAll(async () => {
    fake = await FakeTelegram.start({ token: TOKEN });
    model = await ScriptedOpenAiServer.start();
    server = await startTestServer(backend(), {
      environment: { VIGIL_MODEL: 'openai:scripted', OPENAI_BASE_URL: model.baseUrl, VIGIL_TELEGRAM_BOT_TOKEN: TOKEN, VIGIL_TELEGRAM_API_ROOT: fake.apiRoot, VIGIL_TELEGRAM_USER: ALICE.id, VIGIL_TELEGRAM_MODE: 'polling' },
    });
    await server.services.agents.getOrCreateDefault(ALICE.id);
    const patched = await server.request('PATCH', '/api/agents/default', { body: { tools: { approval: { memory_write: { attended: 'ask' } } } } });
    expect(patched.status).toBe(200);
    await waitFor(() => fake.callsOf('getUpdates').length > 0, waitLong, 'polling');
  });
  afterAll(async () => {
    await server?.destroy();
    await fake?.close();
    await model?.close();
  });

  it('I16: Approve / Reject buttons in the chat; only the chat\'s person decides; the message shows the outcome', async () => {
    model.respondWith((request) =>
      request.messages.at(-1)?.role === 'tool' ? { text: `Done: ${request.messages.at(-1)!.content}` } : { toolCalls: [{ id: 'call_tg', name: 'memory_write', arguments: { content: 'likes tea' } }] },
    );
    const chatId = 5151;
    fake.pushMessage({ chatId, text: 'Remember that I like tea' });
    await waitFor(() => fake.sentTo(chatId).some((sent) => sent.reply_markup !== undefined), waitLong, 'the approval request in the chat');
    const request = fake.callsOf('sendMessage').find((call) => call.payload.reply_markup !== undefined)!;
    expect(request.payload.text).toContain('memory_write');
    const [approve, reject] = request.payload.reply_markup.inline_keyboard[0];
    expect([approve.text, reject.text]).toEqual(['Approve', 'Reject']);
    const row = await (server.storage as SqlStorage).context.db.withTables<TelegramTables>().selectFrom('telegram_chats').select('thread_id').where('chat_id', '=', chatId).executeTakeFirstOrThrow();
    const [pending] = (await server.request('GET', `/api/approvals?threadId=${row.thread_id}`)).body.approvals;
    expect(pending).toMatchObject({ status: 'pending', tool: 'memory_write' });

    // Someone else pressing the button decides nothing.
    fake.pushButton({ chatId, fromId: 999, messageId: request.result!.message_id, text: request.payload.text, data: approve.callback_data });
    await waitFor(() => fake.callsOf('answerCallbackQuery').length === 1, waitLong, 'the refusal');
    expect(fake.callsOf('answerCallbackQuery')[0]!.payload.text).toContain('Only the person');
    expect((await server.request('GET', `/api/approvals/${pending.id}`)).body.status).toBe('pending');

    fake.pushButton({ chatId, messageId: request.result!.message_id, text: request.payload.text, data: approve.callback_data });
    await waitFor(() => fake.callsOf('editMessageText').length === 1, waitLong, 'the edited request');
    expect(fake.callsOf('editMessageText')[0]!.payload).toMatchObject({ chat_id: chatId, message_id: request.result!.message_id });
    expect(fake.callsOf('editMessageText')[0]!.payload.text).toContain('memory_write: approved');
    expect((await server.request('GET', `/api/approvals/${pending.id}`)).body).toMatchObject({ status: 'approved', channel: 'telegram', decidedBy: ALICE.id });
    await waitFor(() => fake.sentTo(chatId).some((sent) => String(sent.text).startsWith('Done:')), waitLong, 'the reply after approval');
    expect(((await server.request('GET', '/api/agents/default/memories')).body.memories as Array<{ content: string }>).map((memory) => memory.content)).toEqual(['likes tea']);

    // A second press finds it decided: said so, nothing runs twice.
    fake.pushButton({ chatId, messageId: request.result!.message_id, text: request.payload.text, data: reject.callback_data });
    await waitFor(() => fake.callsOf('answerCallbackQuery').length === 3, waitLong, 'the second answer');
    expect(fake.callsOf('answerCallbackQuery')[2]!.payload.text).toContain('already approved');
  });

  it("I12, I16: a chat's button decides only the chat's own thread's requests: one naming another thread's approval decides nothing", async () => {
    model.respondWith((request) =>
      request.messages.at(-1)?.role === 'tool' ? { text: `Done: ${request.messages.at(-1)!.content}` } : { toolCalls: [{ id: 'call_other', name: 'memory_write', arguments: { content: 'likes coffee' } }] },
    );
    // The same vigil user's thread outside this chat (the API), waiting for a decision.
    const threadId = (await server.request('POST', '/api/threads', { body: { agentId: 'default' } })).body.id as string;
    expect((await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'Remember coffee' } })).body.run.status).toBe('interrupted');
    const [other] = (await server.request('GET', `/api/approvals?threadId=${threadId}`)).body.approvals;
    // A chat of the bot (every chat maps to the same vigil user), with a button press naming that approval.
    const chatId = 6262;
    fake.pushMessage({ chatId, text: 'Remember that I like cake' });
    await waitFor(() => fake.sentTo(chatId).some((sent) => sent.reply_markup !== undefined), waitLong, 'the chat\'s own approval request');
    const own = fake.callsOf('sendMessage').find((call) => call.payload.chat_id === chatId && call.payload.reply_markup !== undefined)!;
    const answered = fake.callsOf('answerCallbackQuery').length;
    fake.pushButton({ chatId, messageId: own.result!.message_id, text: own.payload.text, data: `ap:${other.id}:a` });
    await waitFor(() => fake.callsOf('answerCallbackQuery').length === answered + 1, waitLong, 'the answer');
    expect(fake.callsOf('answerCallbackQuery')[answered]!.payload.text).toContain('no longer exists');
    expect((await server.request('GET', `/api/approvals/${other.id}`)).body.status).toBe('pending');
    await server.request('POST', `/api/approvals/${other.id}/decision`, { body: { decision: 'reject' } });
  });
}
