import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SqlStorage } from '../../src/adapters/sql/sql-storage.js';
import { SqlTimerRepository } from '../../src/adapters/sql/timer-repository.js';
import { localDay } from '../../src/domain/autonomy/zoned-time.js';
import { TRIGGER_PROMPTS } from '../../src/domain/message-metadata.js';
import { ScriptedOpenAiServer } from '../helpers/openai-server.js';
import { ALICE, startTestServer, type Backend, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';

type Json = Record<string, any>;

/** I5 with retries: each model call of a follow-up spends one unit of the daily budget, once. Against the scripted model server. */
export function autonomyBudgetSuite(backend: () => Backend): void {
  describe('autonomy budget across retries', () => {
    let model: ScriptedOpenAiServer;
    let server: TestServer;
    beforeAll(async () => {
      model = await ScriptedOpenAiServer.start();
      server = await startTestServer(backend(), { environment: { VIGIL_MODEL: 'openai:scripted', OPENAI_BASE_URL: model.baseUrl }, autonomy: { modelRetries: 2, retryBackoffMs: 10 } });
    });
    afterAll(async () => {
      await server?.destroy();
      await model?.close();
    });

    /**
     * The follow-up's first model call asks for `call`; its next step fails once (500) and
     * then answers `reply`; everything else is answered "Noted.". Returns the agent and the
     * thread with the person's first message, whose silence starts the follow-up.
     */
    async function followUpCalling(call: { id: string; name: string; arguments: Json }, reply: string): Promise<{ agentId: string; threadId: string }> {
      let failedOnce = false;
      model.reset();
      model.respondWith((request) => {
        if (!JSON.stringify(request.messages).includes(TRIGGER_PROMPTS.check_in)) return { text: 'Noted.' };
        const sinceLastHuman = request.messages.slice(request.messages.map((message) => message.role).lastIndexOf('user') + 1);
        if (!sinceLastHuman.some((message) => message.role === 'tool')) return { toolCalls: [call] };
        if (!failedOnce) {
          failedOnce = true;
          return { status: 500, errorMessage: 'transient' };
        }
        return { text: reply };
      });
      const agentId = `b-${randomUUID().slice(0, 8)}`;
      const autonomy = { enabled: true, delaysMs: { check_in: 150, question_unanswered: 150, task_incomplete: 150, waiting_for_decision: 150 }, minDelayMs: 10, maxPerSilence: 1, modelCallsPerDay: 10 };
      expect((await server.request('POST', '/api/agents', { body: { id: agentId, name: 'tools', autonomy } })).status).toBe(201);
      const threadId = (await server.request('POST', '/api/threads', { body: { agentId } })).body.id as string;
      expect((await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'Hi' } })).status).toBe(200);
      return { agentId, threadId };
    }

    /** Units of the agent's daily budget spent today. */
    function unitsUsed(agentId: string): Promise<number> {
      return new SqlTimerRepository((server.storage as SqlStorage).context).modelCallsUsed(ALICE.id, agentId, localDay(new Date(), 'UTC'));
    }

    it('I5: a retried tool-loop step of a follow-up is paid once: one unit per model call made', async () => {
      const { agentId, threadId } = await followUpCalling({ id: 'call_time', name: 'current_time', arguments: { timeZone: 'UTC' } }, 'Just checking in.');
      let followUp: Json | undefined;
      await waitFor(async () => {
        const runs = (await server.request('GET', `/api/threads/${threadId}/runs?limit=100`)).body.runs as Json[];
        followUp = runs.find((run) => run.trigger === 'autonomy' && run.status !== 'running');
        return followUp !== undefined;
      }, 20_000, 'the follow-up run to end');
      expect(followUp).toMatchObject({ status: 'succeeded' });
      const calls = model.requestsMentioning(TRIGGER_PROMPTS.check_in).length; // the tool call, the failed step, the retried step
      expect(calls).toBe(3);
      expect(await unitsUsed(agentId)).toBe(calls);
    });

    it('I5, I16: a follow-up resumed after its tool call was approved pays for its model calls, a retried one included: one unit per call made', async () => {
      // memory_write asks when nobody watches (the default): the follow-up waits for a person.
      const { agentId, threadId } = await followUpCalling({ id: 'call_note', name: 'memory_write', arguments: { content: 'likes tea' } }, 'Noted your tea.');
      const runs = async () => ((await server.request('GET', `/api/threads/${threadId}/runs?limit=100`)).body.runs as Json[]).filter((run) => run.trigger === 'autonomy');
      await waitFor(async () => (await runs()).some((run) => run.status === 'interrupted'), 20_000, 'the follow-up to wait for approval');
      const [approval] = (await server.request('GET', `/api/approvals?threadId=${threadId}`)).body.approvals as Json[];
      expect((await server.request('POST', `/api/approvals/${approval!.id}/decision`, { body: { decision: 'approve' } })).status).toBe(200);
      await waitFor(async () => (await runs()).some((run) => run.status === 'succeeded'), 20_000, 'the resumed follow-up to end');
      const calls = model.requestsMentioning(TRIGGER_PROMPTS.check_in).length; // the tool call; after the approval, the failed step and the retried one
      expect(calls).toBe(3);
      expect(await unitsUsed(agentId)).toBe(calls);
    });
  });
}
