import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqlPlanRepository } from '../../src/adapters/sql/plan-repository.js';
import type { SqlStorage } from '../../src/adapters/sql/sql-storage.js';
import type { TelegramTables } from '../../src/adapters/sql/telegram-tables.js';
import { FakeTelegram } from '../helpers/fake-telegram.js';
import { ALICE, BOB, startTestServer, type Backend, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';
import { GatedModel } from './langgraph-sdk.suite.js';

type Json = Record<string, any>;

/**
 * What deleting a thread or an agent leaves behind: nothing of it is served after, nothing
 * acts on it, no run writes it back, and nothing of it reaches whoever reuses its id (I12:
 * ids are the client's to choose, a thread's through the LangGraph protocol).
 */
export function deletedDataSuite(backend: () => Backend): void {
  describe('deleted threads and agents', () => {
    let server: TestServer;

    beforeAll(async () => {
      server = await startTestServer(backend(), { models: () => new GatedModel({}), environment: { VIGIL_OUTBOUND_WEBHOOKS_ALLOW_PRIVATE: 'true' } });
    });
    afterAll(async () => {
      for (const release of GatedModel.held.splice(0)) release();
      await server?.destroy();
    });

    const sqlDb = () => (server.storage as SqlStorage).context.db;
    const newThread = async (body: Json = {}) => {
      const created = await server.request('POST', '/api/threads', { body });
      expect(created.status).toBe(201);
      return created.body.id as string;
    };
    const checkpointOf = (threadId: string) => server.storage.checkpointer.getTuple({ configurable: { thread_id: threadId } });

    it('I12: a run in flight when its thread is deleted is called off and writes nothing back; whoever reuses the id sees none of it', async () => {
      const threadId = randomUUID();
      expect((await server.request('POST', '/threads', { body: { thread_id: threadId } })).status).toBe(200);
      // Alice's run reaches the model and waits there; a second message queues behind it.
      const sending = server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'my secret diagnosis [hold]' } });
      await waitFor(() => GatedModel.held.length > 0, 10_000, 'the run to reach the model');
      const queued = server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'and my other secret' } });
      await waitFor(async () => (await server.request('GET', `/api/threads/${threadId}/runs`)).body.runs.length === 1, 10_000, 'the first run recorded');

      expect((await server.request('DELETE', `/api/threads/${threadId}`)).status).toBe(204);
      // The deletion did not wait for the held model call: it called the run off.
      const [first, second] = await Promise.all([sending, queued]);
      expect(first.status).toBe(200);
      expect(first.body.run).toMatchObject({ status: 'cancelled', reason: 'the thread was deleted' });
      // The queued message was never accepted: its thread is gone.
      expect(second.status).toBe(404);
      expect(second.body.error.code).toBe('THREAD_NOT_FOUND');
      expect(await checkpointOf(threadId)).toBeUndefined();
      const { rows } = await sql<{ n: number | string }>`SELECT count(*) AS n FROM thread_messages m JOIN thread_keys k ON k.key = m.thread_key WHERE k.thread_id = ${threadId}`.execute(sqlDb());
      expect(Number(rows[0]!.n)).toBe(0);

      // Bob takes the id through the LangGraph protocol and talks on it.
      expect((await server.request('POST', '/threads', { token: BOB.token, body: { thread_id: threadId } })).status).toBe(200);
      const sent = await server.request('POST', `/api/threads/${threadId}/messages`, { token: BOB.token, body: { content: 'hello' } });
      expect(sent.status).toBe(200);
      const history = await server.request('GET', `/api/threads/${threadId}/history?limit=50`, { token: BOB.token });
      expect(history.body.messages.map((message: Json) => message.content)).toEqual(['hello', 'Echo: hello']);
      expect(JSON.stringify(await checkpointOf(threadId))).not.toContain('secret');
    });

    it('deleting a thread leaves no row of it in the thread store (history, checkpoints, writes, values)', async () => {
      const threadId = await newThread();
      for (const text of ['one', 'two']) expect((await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: `secret ${text}` } })).status).toBe(200);
      const keys = (await sql<{ key: number }>`SELECT key FROM thread_keys WHERE thread_id = ${threadId}`.execute(sqlDb())).rows.map((row) => row.key);
      expect(keys.length).toBeGreaterThan(0);
      expect((await server.request('DELETE', `/api/threads/${threadId}`)).status).toBe(204);
      const tables = ['thread_messages', 'thread_checkpoints', 'thread_checkpoint_writes', 'thread_values'];
      const counts: Record<string, number> = {};
      for (const table of tables) {
        const { rows } = await sql<{ n: number | string }>`SELECT count(*) AS n FROM ${sql.table(table)} WHERE thread_key IN (${sql.join(keys)})`.execute(sqlDb());
        counts[table] = Number(rows[0]!.n);
      }
      expect(counts).toEqual(Object.fromEntries(tables.map((table) => [table, 0])));
      expect((await sql<{ n: number | string }>`SELECT count(*) AS n FROM thread_keys WHERE thread_id = ${threadId}`.execute(sqlDb())).rows[0]!.n).toEqual(expect.anything());
      expect(Number((await sql<{ n: number | string }>`SELECT count(*) AS n FROM thread_keys WHERE thread_id = ${threadId}`.execute(sqlDb())).rows[0]!.n)).toBe(0);
    });

    it("a deleted thread's pending approvals are gone, arguments and all; a memory the agent noted there stays, no longer naming it", async () => {
      const threadId = await newThread();
      const thread = (await server.request('GET', `/api/threads/${threadId}`)).body;
      // The agent notes a memory in the thread (memory_write, no approval asked).
      expect((await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'note [remember:likes green tea]' } })).status).toBe(200);
      const noted = (await server.request('GET', `/api/agents/${thread.agentId}/memories?limit=100`)).body.memories.find((memory: Json) => memory.content === 'likes green tea');
      expect(noted.origin).toMatchObject({ by: 'agent', threadId });
      await server.services.approvals.requestStep({
        run: { runId: randomUUID(), threadId, userId: ALICE.id, agentId: thread.agentId },
        messageId: `m-${randomUUID()}`,
        attended: true,
        calls: [{ toolCallId: 'call-1', tool: 'send_email', args: { body: 'my secret diagnosis' }, timeoutMs: 3_600_000 }],
      });
      expect((await server.request('GET', '/api/approvals?status=pending')).text).toContain('secret diagnosis');

      expect((await server.request('DELETE', `/api/threads/${threadId}`)).status).toBe(204);
      const listed = await server.request('GET', '/api/approvals?limit=100');
      expect(listed.body.approvals.filter((approval: Json) => approval.threadId === threadId)).toEqual([]);
      const kept = (await server.request('GET', `/api/agents/${thread.agentId}/memories?limit=100`)).body.memories.find((memory: Json) => memory.id === noted.id);
      expect(kept.origin).toEqual({ by: 'agent', runId: noted.origin.runId, threadId: null });
    });

    it("a deleted thread's plans are no longer served and cannot be resumed onto it", async () => {
      const agentId = `p-${randomUUID().slice(0, 8)}`;
      expect((await server.request('POST', '/api/agents', { body: { id: agentId, name: 'Planner', kind: 'planner', systemPrompt: 'You plan.' } })).status).toBe(201);
      const threadId = await newThread({ agentId });
      const plans = new SqlPlanRepository((server.storage as SqlStorage).context);
      const plan = await plans.create({ id: randomUUID(), userId: ALICE.id, agentId, threadId, request: 'plan my secret surgery', sourceMessageId: null, runId: randomUUID() }, new Date().toISOString());
      expect((await server.request('GET', `/api/plans/${plan.id}`)).status).toBe(200);

      expect((await server.request('DELETE', `/api/threads/${threadId}`)).status).toBe(204);
      expect((await server.request('GET', `/api/plans/${plan.id}`)).status).toBe(404);
      expect((await server.request('POST', `/api/plans/${plan.id}/resume`, { body: {} })).status).toBe(404);
      expect(await checkpointOf(threadId)).toBeUndefined();
    });

    it('an agent id deleted and made again (the default agent comes back on its own) starts without the old memories and outbound webhooks', async () => {
      const agentId = `r-${randomUUID().slice(0, 8)}`;
      expect((await server.request('POST', '/api/agents', { body: { id: agentId, name: 'Old' } })).status).toBe(201);
      expect((await server.request('POST', `/api/agents/${agentId}/memories`, { body: { content: 'my secret diagnosis' } })).status).toBe(201);
      expect((await server.request('POST', `/api/agents/${agentId}/webhooks`, { body: { url: 'http://127.0.0.1:9/old-owner', events: ['run.completed'] } })).status).toBe(201);
      // Bob's agent of the same id is his, and keeps what is his.
      expect((await server.request('POST', '/api/agents', { token: BOB.token, body: { id: agentId, name: 'Bob' } })).status).toBe(201);
      expect((await server.request('POST', `/api/agents/${agentId}/memories`, { token: BOB.token, body: { content: 'bob remembers' } })).status).toBe(201);

      expect((await server.request('DELETE', `/api/agents/${agentId}`)).status).toBe(204);
      expect((await server.request('POST', '/api/agents', { body: { id: agentId, name: 'New' } })).status).toBe(201);
      expect((await server.request('GET', `/api/agents/${agentId}/memories?limit=50`)).body.memories).toEqual([]);
      expect((await server.request('GET', `/api/agents/${agentId}/webhooks`)).body.webhooks).toEqual([]);
      const bobs = (await server.request('GET', `/api/agents/${agentId}/memories?limit=50`, { token: BOB.token })).body.memories;
      expect(bobs.map((memory: Json) => memory.content)).toEqual(['bob remembers']);
    });

    it('I16: retention keeps the run an approval still waits on, so an approval given after the pass still runs the call', async () => {
      const agentId = `w-${randomUUID().slice(0, 8)}`;
      const agent = await server.request('POST', '/api/agents', { body: { id: agentId, name: 'asks', tools: { approval: { memory_write: { attended: 'ask', timeoutMs: 30 * 86_400_000 } } } } });
      expect(agent.status).toBe(201);
      const threadId = await newThread({ agentId });
      const sent = await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'note this [remember:likes tea]' } });
      expect(sent.body.run.status).toBe('interrupted');
      const [pending] = (await server.request('GET', `/api/approvals?threadId=${threadId}`)).body.approvals as Json[];
      expect(pending).toMatchObject({ status: 'pending', tool: 'memory_write' });

      // The person answers a 30-day request after VIGIL_RETENTION_DAYS (30): the waiting run ended 31 days ago.
      const longAgo = new Date(Date.now() - 31 * 86_400_000).toISOString();
      await sqlDb().updateTable('runs').set({ ended_at: longAgo, started_at: longAgo, requested_at: longAgo }).where('id', '=', pending!.runId).execute();
      await server.services.retention.runOnce();
      expect((await server.request('GET', `/api/runs/${pending!.runId}`)).status).toBe(200);

      expect((await server.request('POST', `/api/approvals/${pending!.id}/decision`, { body: { decision: 'approve' } })).status).toBe(200);
      await waitFor(async () => (await server.request('GET', `/api/approvals/${pending!.id}`)).body.executed === true, 10_000, 'the approved call to run');
      // Once decided, the old run is prunable like any other.
      await server.services.retention.runOnce();
      expect((await server.request('GET', `/api/runs/${pending!.runId}`)).status).toBe(404);
    });

    describe('Telegram', () => {
      const TOKEN = '7000000001:AAFakeTokenForTests_0123456789abcdefghij';
      let fake: FakeTelegram;
      let telegramServer: TestServer;

      beforeAll(async () => {
        fake = await FakeTelegram.start({ token: TOKEN });
        telegramServer = await startTestServer(backend(), {
          models: () => new GatedModel({}),
          environment: { VIGIL_TELEGRAM_BOT_TOKEN: TOKEN, VIGIL_TELEGRAM_API_ROOT: fake.apiRoot, VIGIL_TELEGRAM_USER: ALICE.id, VIGIL_TELEGRAM_MODE: 'polling' },
        });
        await waitFor(() => fake.callsOf('getUpdates').length > 0);
      });
      afterAll(async () => {
        await telegramServer?.destroy();
        await fake?.close();
      });

      it('a chat whose thread was deleted is answered again, on a new thread', async () => {
        const chatId = 8181;
        fake.pushMessage({ chatId, text: 'first' });
        await waitFor(() => fake.sentTo(chatId).length === 1, 10_000, 'the first reply');
        const chats = () => (telegramServer.storage as SqlStorage).context.db.withTables<TelegramTables>().selectFrom('telegram_chats').select('thread_id').where('chat_id', '=', chatId);
        const { thread_id: oldThread } = await chats().executeTakeFirstOrThrow();
        expect((await telegramServer.request('DELETE', `/api/threads/${oldThread}`)).status).toBe(204);

        fake.pushMessage({ chatId, text: 'are you there?' });
        await waitFor(() => fake.sentTo(chatId).length === 2, 10_000, 'a reply after the thread was deleted');
        const { thread_id: newThreadId } = await chats().executeTakeFirstOrThrow();
        expect(newThreadId).not.toBe(oldThread);
        const history = await telegramServer.request('GET', `/api/threads/${newThreadId}/history`);
        expect(history.body.messages.map((message: Json) => message.content)).toEqual(['are you there?', 'Echo: are you there?']);

        // I12: a thread made later with the old id (by anyone) is not the chat's: its approval asks do not reach it.
        telegramServer.services.events.publish({
          type: 'approval.requested',
          threadId: oldThread,
          runId: 'someone-else',
          at: new Date().toISOString(),
          approvalId: 'a-1',
          toolCallId: 'c-1',
          tool: 'send_email',
          arguments: { body: 'not for this chat' },
          expiresAt: new Date(Date.now() + 60_000).toISOString(),
          attended: true,
        });
        fake.pushMessage({ chatId, text: 'and now?' });
        await waitFor(() => fake.sentTo(chatId).length >= 3, 10_000, 'the reply to the next message');
        expect(JSON.stringify(fake.sentTo(chatId))).not.toContain('not for this chat');
      });
    });
  });
}
