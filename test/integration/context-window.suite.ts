import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HumanMessage } from '@langchain/core/messages';
import { TokenCounter } from '../../src/agent/context/token-counter.js';
import { SUMMARY_SECTION_HEADING } from '../../src/domain/context/conversation-summary.js';
import { syntheticMetadata, TRIGGER_PROMPTS } from '../../src/domain/message-metadata.js';
import { RecordingDemoModel } from '../helpers/recording-demo-model.js';
import { ALICE, BOB, startTestServer, type Backend, type TestServer } from '../helpers/test-server.js';

/**
 * I14 end to end: a thread driven through the server past several folds with the demo
 * model. History keeps every message; every model call fits the budget; the summary is
 * internal, system-written and records its coverage; the memory query keeps its
 * provenance; a failed summary call loses nothing and the next turn folds.
 */
export function contextWindowSuite(backend: () => Backend): void {
  const BUDGET = 2000;
  let server: TestServer;
  const model = new RecordingDemoModel();
  const counter = new TokenCounter();

  beforeAll(async () => {
    server = await startTestServer(backend(), { models: () => model });
    await server.request('POST', '/api/threads', { body: {} }); // the default agent is made on first use
    const put = await server.request('PUT', '/api/agents/default/context', { body: { maxTokens: BUDGET } });
    expect(put.status).toBe(200);
  });
  afterAll(async () => {
    await server?.destroy();
  });

  /** A person's message of about 150 tokens, numbered so every one can be found again. */
  const said = (turn: number) => `Turn ${turn}: ${`note ${turn} about the garden, the weather and the week ahead. `.repeat(12).trim()}`;
  const callTokens = (messages: readonly import('@langchain/core/messages').BaseMessage[]) => messages.reduce((sum, message) => sum + counter.message(message).tokens, 0);

  async function send(threadId: string, content: string) {
    const response = await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content } });
    expect(response.status).toBe(200);
    expect(response.body.run.status).toBe('succeeded');
    return response.body;
  }
  async function context(threadId: string, token = ALICE.token) {
    return server.request('GET', `/api/threads/${threadId}/context`, { token });
  }
  const querySources = (threadId: string) => server.logs.filter((line) => line.threadId === threadId && line.msg === 'Memory query source selected');

  it('I14: past several folds, history keeps every message and every model call fits the budget', async () => {
    const threadId = (await server.request('POST', '/api/threads', { body: {} })).body.id as string;
    const firstCall = model.calls.length;
    const turns = 16;
    for (let turn = 1; turn <= turns; turn++) {
      await send(threadId, said(turn));
      // I2: the current real message is the query, before and after folds.
      expect(querySources(threadId).at(-1)).toMatchObject({ querySource: 'current_message', query: said(turn).slice(0, 50) });
    }

    // Every message is still in history, in order: nothing was deleted by a fold.
    const history = await server.request('GET', `/api/threads/${threadId}/history?limit=200`);
    expect(history.body.messages).toHaveLength(turns * 2);
    const personTexts = history.body.messages.filter((message: { role: string }) => message.role === 'user').map((message: { content: unknown }) => message.content);
    expect(personTexts).toEqual(Array.from({ length: turns }, (_, index) => said(index + 1)));
    // The summary is never a message, visible or internal (I2).
    const all = await server.request('GET', `/api/threads/${threadId}/history?limit=200&include=internal`);
    expect(all.body.messages).toHaveLength(turns * 2);
    expect(JSON.stringify(all.body.messages)).not.toContain('[demo summary]');

    // Every model call (replies and summaries) fits its input limit.
    const calls = model.calls.slice(firstCall);
    const view = (await context(threadId)).body;
    const inputLimit = view.budget.inputLimit as number;
    expect(view.budget).toMatchObject({ maxTokens: BUDGET, source: 'agent', answerTokens: 400 });
    for (const call of calls) expect(callTokens(call.messages)).toBeLessThanOrEqual(call.summary ? BUDGET : inputLimit);
    const replies = calls.filter((call) => !call.summary);
    expect(replies).toHaveLength(turns);
    // Without fitting the last call would carry all 31 earlier messages (~5,000 tokens).
    expect(replies.at(-1)!.messages.length).toBeLessThan(turns * 2 - 1);

    // Several folds, each incremental: the previous summary and only the newly folded messages.
    const summaries = calls.filter((call) => call.summary);
    expect(summaries.length).toBeGreaterThanOrEqual(3);
    const foldedTurns: number[] = [];
    for (const [index, call] of summaries.entries()) {
      const request = String(call.messages[1]!.content);
      if (index > 0) expect(request).toMatch(/<summary_so_far>\n\[demo summary\] \d+ messages folded/);
      const fresh = request.slice(request.indexOf('<new_messages>'));
      const turnsInCall = [...fresh.matchAll(/person: Turn (\d+):/g)].map((match) => Number(match[1]));
      expect(turnsInCall.length).toBeGreaterThan(0);
      // Each message is folded once: a summary call never reads what an earlier one covered.
      for (const number of turnsInCall) expect(foldedTurns).not.toContain(number);
      foldedTurns.push(...turnsInCall);
    }
    expect(foldedTurns).toEqual([...foldedTurns].sort((a, b) => a - b));

    // The summary: internal, system-written, with what it covers.
    expect(view.summary).toMatchObject({ writtenBy: 'system', coverage: { firstMessageId: all.body.messages[0].id, model: 'demo' } });
    const coverage = view.summary.coverage;
    expect(coverage.folds).toBe(summaries.length);
    const lastCovered = all.body.messages.findIndex((message: { id: string }) => message.id === coverage.lastMessageId);
    expect(lastCovered + 1).toBe(coverage.messageCount);
    expect(view.messages).toMatchObject({ inThread: turns * 2, summarized: coverage.messageCount, trimmed: 0 });
    // The window is what follows the coverage, to the newest message.
    expect(view.messages.window.map((entry: { id: string }) => entry.id)).toEqual(all.body.messages.slice(coverage.messageCount).map((message: { id: string }) => message.id));
    // The model sees the summary in the system prompt, under its own heading, never as a person's message.
    const lastReply = replies.at(-1)!.messages;
    expect(String(lastReply[0]!.content)).toContain(SUMMARY_SECTION_HEADING);
    expect(lastReply.slice(1).some((message) => String(message.content).includes('[demo summary]'))).toBe(false);
    expect(view.inputTokens).toBeLessThanOrEqual(inputLimit);

    // The thread's activity is the person's, not the fold's (I2).
    const thread = (await server.request('GET', `/api/threads/${threadId}`)).body;
    expect(thread.messageCount).toBe(turns * 2);
    expect(thread.lastUserActivityAt).toBe(history.body.messages.at(-2).createdAt);

    // I2: after folds, a follow-up's memory query is the last REAL user message (still in the thread), not the summary.
    await server.services.conversations.runTriggered(ALICE.id, threadId, {
      trigger: 'autonomy',
      input: new HumanMessage({ content: TRIGGER_PROMPTS.check_in, additional_kwargs: syntheticMetadata('check_in', 'idle') }),
    });
    expect(querySources(threadId).at(-1)).toMatchObject({ querySource: 'last_real_user_message', query: said(turns).slice(0, 50) });
  });

  it('I2: a thread with no real user message falls back to the summary for its memory query, once there is one', async () => {
    const threadId = (await server.request('POST', '/api/threads', { body: {} })).body.id as string;
    const cron = (turn: number) =>
      server.services.conversations.runTriggered(ALICE.id, threadId, {
        trigger: 'cron',
        input: new HumanMessage({ content: `Report ${turn}: ${'collect the figures of the day and list them. '.repeat(14)}`, additional_kwargs: { synthetic: true, trigger_type: 'cron' } }),
        meta: { schedule_id: 'sch_report', fire_id: `fire-${turn}`, scheduled_for_utc: '2026-02-03T09:00:00.000Z' },
      });
    await cron(0);
    expect(querySources(threadId)).toEqual([]); // no source: skipped (logged at info for cron)
    let turn = 1;
    while ((await context(threadId)).body.summary === null && turn < 20) await cron(turn++);
    expect((await context(threadId)).body.summary).not.toBeNull();
    await cron(turn);
    expect(querySources(threadId).at(-1)).toMatchObject({ querySource: 'conversation_summary' });
    expect(String(querySources(threadId).at(-1)!.query)).toMatch(/^\[demo summary\]/);
  });

  it('I14: a summary call that fails loses nothing: the turn is answered by trimming, and the next turn folds', async () => {
    const threadId = (await server.request('POST', '/api/threads', { body: {} })).body.id as string;
    // Up to the first fold.
    let turn = 1;
    while ((await context(threadId)).body.summary === null) await send(threadId, said(turn++));
    const before = (await context(threadId)).body;

    // Every summary call of the next turns fails, until the thread has messages neither summarised nor sent.
    model.failSummaries = 1000;
    const failedBefore = server.logs.filter((line) => line.msg.startsWith('conversation summary failed')).length;
    let trimmed = 0;
    while (trimmed === 0 && turn < 60) {
      const body = await send(threadId, said(turn++));
      expect(body.messages.at(-1).role).toBe('assistant'); // answered all the same
      trimmed = (await context(threadId)).body.messages.trimmed;
    }
    model.failSummaries = 0;
    expect(trimmed).toBeGreaterThan(0);
    const failed = server.logs.filter((line) => line.msg.startsWith('conversation summary failed'));
    expect(failed.length).toBeGreaterThan(failedBefore);
    expect(failed.at(-1)).toMatchObject({ level: 40 });
    const during = (await context(threadId)).body;
    expect(during.summary.coverage).toEqual(before.summary.coverage); // the failed folds wrote nothing
    expect(during.inputTokens).toBeLessThanOrEqual(during.budget.inputLimit);

    // History kept every message through the failures.
    const history = await server.request('GET', `/api/threads/${threadId}/history?limit=200`);
    expect(history.body.messages).toHaveLength((turn - 1) * 2);

    // The next turn folds again, and catches up.
    await send(threadId, said(turn++));
    const after = (await context(threadId)).body;
    expect(after.summary.coverage.folds).toBeGreaterThan(before.summary.coverage.folds);
    expect(after.summary.coverage.messageCount).toBeGreaterThan(before.summary.coverage.messageCount);
  });

  it("I5: a summary call in an autonomous run spends the agent's autonomy model-call budget; with none left it trims instead", async () => {
    const threadId = (await server.request('POST', '/api/threads', { body: {} })).body.id as string;
    // A person's turns until a fold is due but has not happened (every summary call fails meanwhile).
    model.failSummaries = 1000;
    let turn = 1;
    while ((await context(threadId)).body.messages.trimmed === 0 && turn < 60) await send(threadId, said(turn++));
    model.failSummaries = 0;
    const followUp = () =>
      server.services.conversations.runTriggered(ALICE.id, threadId, {
        trigger: 'autonomy',
        input: new HumanMessage({ content: TRIGGER_PROMPTS.check_in, additional_kwargs: syntheticMetadata('check_in', 'idle') }),
      });

    // No autonomy budget left: the follow-up is answered, with no summary call.
    expect((await server.request('PUT', '/api/agents/default/autonomy', { body: { enabled: false, modelCallsPerDay: 0 } })).status).toBe(200);
    const summariesBefore = model.summaries().length;
    const refused = await followUp();
    expect(refused.run.status).toBe('succeeded');
    expect(model.summaries()).toHaveLength(summariesBefore);
    expect(server.logs.some((line) => line.msg === 'autonomy model-call budget spent; no model call' && line.purpose === 'conversation summary')).toBe(true);
    expect((await context(threadId)).body.messages.trimmed).toBeGreaterThan(0);

    // With budget, the next autonomous run folds.
    await server.request('PUT', '/api/agents/default/autonomy', { body: { enabled: false, modelCallsPerDay: 100 } });
    await followUp();
    expect(model.summaries().length).toBe(summariesBefore + 1);
    expect((await context(threadId)).body.summary).not.toBeNull();
  });

  it('I12: another user gets 404 for the context of a thread that is not theirs; an unknown thread is 404', async () => {
    const threadId = (await server.request('POST', '/api/threads', { body: {} })).body.id as string;
    await send(threadId, 'hello');
    const mine = await context(threadId);
    expect(mine.status).toBe(200);
    expect(mine.body.messages.window).toHaveLength(2);
    expect(mine.body.summary).toBeNull();
    const theirs = await context(threadId, BOB.token);
    expect(theirs.status).toBe(404);
    expect(theirs.body.error.code).toBe('THREAD_NOT_FOUND');
    expect(JSON.stringify(theirs.body)).not.toContain('hello');
    const unknown = await context('no-such-thread');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('THREAD_NOT_FOUND');
  });

  it('I11: context settings are validated with stable codes; another user cannot read or set them (I12)', async () => {
    const bad = await server.request('PUT', '/api/agents/default/context', { body: { maxTokens: 10 } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('VALIDATION_FAILED');
    const unknownField = await server.request('PUT', '/api/agents/default/context', { body: { maxTokens: 5000, deleteHistory: true } });
    expect(unknownField.status).toBe(400);
    expect(unknownField.body.error.code).toBe('VALIDATION_FAILED');
    expect((await server.request('GET', '/api/agents/default/context')).body).toMatchObject({ maxTokens: BUDGET });
    const none = await server.request('GET', '/api/agents/no-such-agent/context');
    expect(none.status).toBe(404);
    expect(none.body.error.code).toBe('AGENT_NOT_FOUND');
    // Bob has his own default agent; Alice's settings are not his.
    await server.request('POST', '/api/threads', { body: {}, token: BOB.token });
    expect((await server.request('GET', '/api/agents/default/context', { token: BOB.token })).body.maxTokens).toBeUndefined();
  });

  it("I14, I11: an agent whose system prompt takes more than half of its own input budget is refused with VALIDATION_FAILED, whichever changes (prompt or budget)", async () => {
    const long = 'Always answer in the voice of a careful gardener who explains every step. '.repeat(260); // ~19,000 characters
    const created = await server.request('POST', '/api/agents', { body: { id: 'verbose', name: 'Verbose', systemPrompt: long } });
    expect(created.status).toBe(201); // no budget of its own: the server's is checked at run time
    const lowered = await server.request('PUT', '/api/agents/verbose/context', { body: { maxTokens: 1000 } });
    expect(lowered.status).toBe(400);
    expect(lowered.body.error.code).toBe('VALIDATION_FAILED');
    expect(lowered.body.error.message).toMatch(/system prompt takes \d+ tokens, more than half of the agent's input budget \(400 of 800/);
    expect((await server.request('GET', '/api/agents/verbose/context')).body.maxTokens).toBeUndefined();

    expect((await server.request('PATCH', '/api/agents/verbose', { body: { systemPrompt: 'Be brief.' } })).status).toBe(200);
    expect((await server.request('PUT', '/api/agents/verbose/context', { body: { maxTokens: 1000 } })).status).toBe(200);
    const lengthened = await server.request('PATCH', '/api/agents/verbose', { body: { systemPrompt: long } });
    expect(lengthened.status).toBe(400);
    expect(lengthened.body.error.code).toBe('VALIDATION_FAILED');
    expect((await server.request('GET', '/api/agents/verbose')).body.systemPrompt).toBe('Be brief.');
  });

  it('I14, I11: an agent whose prompt was already over its budget (stored before the check) can still change its other fields; only a change of the prompt or the budget is checked', async () => {
    const long = 'Always answer in the voice of a careful gardener who explains every step. '.repeat(260);
    expect((await server.request('POST', '/api/agents', { body: { id: 'older', name: 'Older', systemPrompt: long } })).status).toBe(201);
    // As stored by an earlier version, which had no such check.
    await server.storage.agents.updateSetting(ALICE.id, 'older', 'context', { maxTokens: 1000 }, new Date().toISOString());
    const renamed = await server.request('PATCH', '/api/agents/older', { body: { name: 'Older, renamed' } });
    expect(renamed.status, JSON.stringify(renamed.body)).toBe(200);
    expect(renamed.body.name).toBe('Older, renamed');
    expect((await server.request('PATCH', '/api/agents/older', { body: { systemPrompt: `${long} More.` } })).status).toBe(400);
  });
}
