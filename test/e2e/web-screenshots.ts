/**
 * `npm run screenshots`: the main views at desktop (1440 px) and phone (375 px) width,
 * from a real server with the demo model, saved under docs/screenshots/.
 */
import { mkdir } from 'node:fs/promises';
import type { Page } from 'playwright-core';
import { buildWebApp } from '../../web/build-if-stale.mjs';
import { launchBrowser } from '../helpers/browser.js';
import { ALICE, startTestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';

const OUT = 'docs/screenshots';
const WIDTHS = { desktop: 1440, phone: 375 } as const;

await buildWebApp();
await mkdir(OUT, { recursive: true });
const server = await startTestServer({ kind: 'sqlite' }, { demoTokenDelayMs: 5, environment: { VIGIL_LOG_LEVEL: 'warn' } });
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
  await call('POST', '/api/hooks', { name: 'github push', taskTemplate: 'A push to {{payload.repository}}: summarise it.' });

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
    for (const view of ['schedules', 'agents', 'webhooks']) {
      await open(page, `${server.url}/#${view}`);
      await page.getByRole('heading', { level: 1 }).waitFor();
      if (view === 'schedules') await waitFor(async () => (await page.locator('.preview li').count()) === 5, 10_000, 'the preview');
      await shot(view);
    }
    await context.close();
  }
  console.log(`screenshots written to ${OUT}/`);
} finally {
  await browser.close();
  await server.destroy();
}

async function open(page: Page, url: string): Promise<void> {
  await page.goto(url);
  await page.getByRole('navigation', { name: 'Main' }).waitFor();
}
