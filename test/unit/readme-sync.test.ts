import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../src/domain/errors.js';
import { SETTING_NAMES } from '../../src/config.js';
import { OPERATIONS } from '../../src/http/openapi-operations.js';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

function section(name: string): string {
  const match = new RegExp(`<!-- ${name}:start -->([\\s\\S]*?)<!-- ${name}:end -->`).exec(readme);
  if (!match?.[1]) throw new Error(`README has no ${name} section`);
  return match[1];
}

/** Routes the README names that the API document leaves out on purpose: the WebSocket upgrade and the document itself. */
const UNDOCUMENTED_ROUTES = new Set(['GET /api/ws', 'GET /api/openapi.json']);

/** `GET /api/threads/:id/history?limit` and `GET /api/threads/{threadId}/history` both → `GET /api/threads/{}/history`. */
function normalRoute(method: string, path: string): string {
  return `${method} ${path.replace(/[?#].*$/, '').replace(/:[A-Za-z_]+|\{[^}]*\}/g, '{}')}`;
}

/**
 * Every `METHOD /path` the given text names, in the README's spellings: `GET/PATCH/DELETE /a`
 * names three routes, and `…` stands for a part of the path before it (`PUT …/context` after
 * `GET /api/agents/:agentId/context`, `GET …/fires` after `/api/schedules/:id`; a bare
 * `…/resume` also takes its method): the longest part that makes a known route, else the
 * path without its last segment.
 */
function routesNamed(text: string, known: ReadonlySet<string>): string[] {
  const routes: string[] = [];
  let previousPath = '';
  let previousMethods = '';
  for (const match of text.matchAll(/`(?:((?:GET|POST|PUT|PATCH|DELETE)(?:\/(?:GET|POST|PUT|PATCH|DELETE))*) (\/[^`\s]*)|((?:GET|POST|PUT|PATCH|DELETE)(?:\/(?:GET|POST|PUT|PATCH|DELETE))* )?…(\/[^`\s]*))`/g)) {
    const [, methods, path, continuedMethods, rest] = match as unknown as [string, string?, string?, string?, string?];
    const currentMethods = methods ?? continuedMethods?.trim() ?? previousMethods;
    const currentPath = path ?? continuation(previousPath, rest ?? '', currentMethods.split('/')[0] ?? '', known);
    previousMethods = currentMethods;
    previousPath = currentPath.replace(/[?#].*$/, '');
    for (const method of currentMethods.split('/')) routes.push(normalRoute(method, currentPath));
  }
  return routes;
}

function continuation(previousPath: string, rest: string, method: string, known: ReadonlySet<string>): string {
  const segments = previousPath.split('/');
  for (let length = segments.length; length > 1; length -= 1) {
    const candidate = `${segments.slice(0, length).join('/')}${rest}`;
    if (known.has(normalRoute(method, candidate))) return candidate;
  }
  return `${segments.slice(0, -1).join('/')}${rest}`;
}

describe('README stays in step with the code', () => {
  it('lists every route of the API document in a route table, and names no route the server lacks', () => {
    const documented = Object.keys(OPERATIONS).map((key) => {
      const [method, path] = key.split(' ') as [string, string];
      return normalRoute(method, path);
    });
    const known = new Set([...documented, ...UNDOCUMENTED_ROUTES]);
    const tableRows = readme.split('\n').filter((line) => line.startsWith('| `')).join('\n');
    const inTables = new Set(routesNamed(tableRows, known));
    expect(documented.filter((route) => !inTables.has(route))).toEqual([]);
    expect([...new Set(routesNamed(readme, known))].filter((route) => !known.has(route))).toEqual([]);
  });

  it('lists every error code with its status and description, and no other', () => {
    const rows = [...section('error-codes').matchAll(/^\| `([A-Z_]+)` \| (\d{3}) \| (.+) \|$/gm)].map((match) => [match[1], Number(match[2]), match[3]]);
    const expected = Object.entries(ERROR_CODES).map(([code, entry]) => [code, entry.status, entry.description]);
    expect(rows).toEqual(expected);
  });

  it('lists every setting, and no other', () => {
    const names = [...section('settings-table').matchAll(/^\| `([A-Z_]+)` \|/gm)].map((match) => match[1]).sort();
    expect(names).toEqual([...SETTING_NAMES].sort());
  });

  it('opens with the install-and-start command and the test command', () => {
    const firstBlock = /```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
    expect(firstBlock).toMatch(/^npm install && npm start/m);
    expect(firstBlock).toMatch(/^npm test/m);
  });
});
