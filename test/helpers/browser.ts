import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { buildWebApp } from '../../web/build-if-stale.mjs';

export const CHROMIUM_PATH = '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-background-networking', '--disable-gpu', '--no-first-run', '--disable-component-update', '--disable-sync'];

/**
 * Whether the browser tests can run here. Without Debian's chromium they are skipped
 * with a message, except in CI, where a missing browser is a failure (describe runs).
 */
export function browserAvailable(): boolean {
  if (existsSync(CHROMIUM_PATH)) return true;
  if (process.env.CI === 'true') return true; // launching fails loudly: CI must have chromium
  console.warn(`web app browser tests skipped: ${CHROMIUM_PATH} is missing (apt-get install -y chromium)`);
  return false;
}

/** Build the web app if its sources changed, then launch the browser. */
export async function launchBrowser(): Promise<Browser> {
  await buildWebApp();
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: ARGS, headless: true });
}
