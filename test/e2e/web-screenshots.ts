/**
 * `npm run screenshots`: the main views at desktop (1440 px) and phone (375 px) width,
 * from a real server with the demo model, saved under docs/screenshots/.
 */
import { mkdir } from 'node:fs/promises';
import type { Page } from 'playwright-core';
import { buildWebApp } from '../../web/build-if-stale.mjs';
import { launchBrowser } from '../helpers/browser.js';
import { ScriptedOpenAiServer } from '../helpers/openai-server.js';
import { ALICE, startTestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';
import { signedHeaders } from '../helpers/webhook-signing.js';

const OUT = 'docs/screenshots';
const WIDTHS = { desktop: 1440, phone: 375 } as const;

await buildWebApp();
await mkdir(OUT, { recursive: true });
// The demo model for everything, except one agent on a scripted OpenAI-compatible server that asks to run a tool (for the approval views).
const model = await ScriptedOpenAiServer.start();
model.respondWith((request) =>
  request.messages.some((message) => message.role === 'tool') ? { text: 'Saved.' } : { toolCalls: [{ name: 'memory_write', arguments: { content: 'Prefers the window seat, token sk-live0123456789abcdefghijklmnop' } }] },
);
const server = await startTestServer({ kind: 'sqlite' }, { demoTokenDelayMs: 5, environment: { VIGIL_LOG_LEVEL: 'warn', OPENAI_BASE_URL: model.baseUrl, OPENAI_API_KEY: 'not-needed' } });
const browser = await launchBrowser();
try {
  const call = async (method: string, path: string, body?: unknown) => (await server.request(method, path, body === undefined ? {} : { body })).body;
  const delay = 800;
  await call('POST', '/api/agents', {
    id: 'assistant',
    name: 'Assistant',
    systemPrompt: 'You are a helpful assistant.',
    autonomy: { enabled: true, delaysMs: { check_in: delay, question_unanswered: delay, task_incomplete: delay, waiting_for_decision: delay }, minDelayMs: 10, maxPerSilence: 1 },
  });
  const thread = await call('POST', '/api/threads', { agentId: 'assistant', title: 'Trip planning' });
  await call('POST', `/api/threads/${thread.id}/messages`, { content: 'Can you help me plan a **weekend in Lisbon**?' });
  await waitFor(async () => ((await call('GET', `/api/threads/${thread.id}/runs`)).runs as Array<{ trigger: string; status: string }>).some((run) => run.trigger === 'autonomy' && run.status === 'succeeded'), 20_000, 'the follow-up');
  await call('POST', '/api/threads', { title: 'Release notes' });
  await call('POST', '/api/schedules', { name: 'daily-digest', task: 'Summarise what happened today', timing: { kind: 'cron', cron: '0 18 * * 1-5', timezone: 'Europe/Lisbon' } });
  const hook = await call('POST', '/api/hooks', { name: 'github push', taskTemplate: 'A push to {{payload.repository}}: summarise it.' });
  for (const repository of ['vigil', 'vigil-docs']) {
    const rawBody = JSON.stringify({ event: 'push', repository });
    const headers = { 'content-type': 'application/json', ...signedHeaders(hook.secret, `msg_${repository}`, Math.floor(Date.now() / 1000), rawBody) };
    const accepted = (await server.request('POST', `/api/hooks/${hook.id}`, { token: '', headers, rawBody })).body;
    await waitFor(async () => (await call('GET', `/api/runs/${accepted.runId}`)).status === 'succeeded', 20_000, 'the delivery run');
  }
  // A plan on the demo model, and a tool call waiting for approval.
  await call('POST', '/api/agents', { id: 'planner', name: 'Planner', kind: 'planner' });
  const planThread = await call('POST', '/api/threads', { agentId: 'planner', title: 'Saturday' });
  await call('POST', `/api/threads/${planThread.id}/messages`, { content: 'Plan my Saturday' });
  await call('POST', '/api/agents', { id: 'careful', name: 'Careful', model: 'openai:scripted', tools: { approval: { memory_write: { attended: 'ask', timeoutMs: 3_600_000 } } } });
  const approvalThread = await call('POST', '/api/threads', { agentId: 'careful', title: 'Seat preferences' });
  await call('POST', `/api/threads/${approvalThread.id}/messages`, { content: 'Remember my seat preference and my token' });

  for (const [label, width] of Object.entries(WIDTHS)) {
    const context = await browser.newContext({ viewport: { width, height: width > 500 ? 900 : 780 } });
    await context.addInitScript((token) => localStorage.setItem('vigil.token', token), ALICE.token);
    const page = await context.newPage();
    const shot = async (name: string) => page.screenshot({ path: `${OUT}/${name}-${label}.png`, fullPage: false });
    await open(page, `${server.url}/#chat/${thread.id}`);
    await page.getByRole('log', { name: 'Conversation' }).locator('article.autonomous').waitFor();
    await shot('chat');
    await page.getByRole('button', { name: 'Inspector' }).click();
    await page.getByRole('complementary', { name: 'Inspector' }).locator('li.run').first().waitFor();
    if (width < 500) await page.getByRole('complementary', { name: 'Inspector' }).scrollIntoViewIfNeeded();
    await shot('inspector');
    await page.getByRole('region', { name: 'Next model call' }).scrollIntoViewIfNeeded();
    await shot('context');
    await open(page, `${server.url}/#chat/${planThread.id}`);
    await inspector(page, true);
    await page.getByRole('region', { name: 'Plans' }).getByText(/· completed/).first().waitFor();
    await page.getByRole('region', { name: 'Plans' }).scrollIntoViewIfNeeded();
    await shot('plan');
    await open(page, `${server.url}/#chat/${approvalThread.id}`);
    await inspector(page, false);
    await page.getByRole('region', { name: 'Waiting for your approval' }).waitFor();
    await shot('approval');
    for (const view of ['approvals', 'schedules', 'agents', 'webhooks']) {
      await open(page, `${server.url}/#${view}`);
      await page.getByRole('heading', { level: 1 }).waitFor();
      if (view === 'schedules') await waitFor(async () => (await page.locator('.preview li').count()) === 5, 10_000, 'the preview');
      if (view === 'approvals') await page.getByRole('article').first().waitFor();
      if (view === 'webhooks') {
        await page.getByText('Deliveries of github push').click();
        await page.getByRole('table', { name: /Deliveries of github push/ }).scrollIntoViewIfNeeded();
      }
      await shot(view);
    }
    await context.close();
  }
  console.log(`screenshots written to ${OUT}/`);
} finally {
  await browser.close();
  await server.destroy();
  await model.close();
}

/** Open or close the inspector (it stays as it was when the hash changes). */
async function inspector(page: Page, open: boolean): Promise<void> {
  const toggle = page.getByRole('button', { name: 'Inspector', exact: true });
  if (open) {
    if ((await toggle.getAttribute('aria-expanded')) !== 'true') await toggle.click();
  } else if ((await page.getByRole('button', { name: 'Close inspector' }).count()) > 0) {
    await page.getByRole('button', { name: 'Close inspector' }).click();
  }
}

async function open(page: Page, url: string): Promise<void> {
  await page.goto(url);
  await page.getByRole('navigation', { name: 'Main' }).waitFor();
}
