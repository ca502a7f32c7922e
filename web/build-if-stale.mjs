// Build the web app into web/dist when it is missing or older than its sources, so
// `npm install` (prepare) and `npm start` (prestart) serve a current app with no extra
// step. Without vite installed (a production install) it says so and leaves the API alone.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const webDir = fileURLToPath(new URL('.', import.meta.url));
const distIndex = join(webDir, 'dist', 'index.html');
/** Server modules the app bundles values from (not only types): a change to one is a change to the app. */
const sharedSources = [join(webDir, '..', 'src', 'http', 'limits.ts')];

function newest(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(0, ...readdirSync(path).map((entry) => newest(join(path, entry))));
}

export function webAppIsStale() {
  if (!existsSync(distIndex)) return true;
  const sources = Math.max(newest(join(webDir, 'src')), newest(join(webDir, 'index.html')), newest(join(webDir, 'vite.config.ts')), ...sharedSources.map(newest));
  return sources > statSync(distIndex).mtimeMs;
}

export async function buildWebApp({ force = false } = {}) {
  if (!force && !webAppIsStale()) return false;
  let vite;
  try {
    vite = await import('vite');
  } catch {
    console.warn('vigil: vite is not installed, so the web app is not built; the API works without it.');
    return false;
  }
  // Always React's production build, also when a test run (NODE_ENV=test) asks for it:
  // Vite and the React plugin read NODE_ENV to choose the development build.
  const previous = process.env.NODE_ENV;
  process.env.NODE_ENV = 'production';
  try {
    await vite.build({ configFile: join(webDir, 'vite.config.ts'), mode: 'production', logLevel: 'warn' });
  } finally {
    if (previous === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = previous;
  }
  return true;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await buildWebApp({ force: process.argv.includes('--force') });
}
