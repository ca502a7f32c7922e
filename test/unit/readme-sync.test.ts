import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../src/domain/errors.js';
import { SETTING_NAMES } from '../../src/config.js';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

function section(name: string): string {
  const match = new RegExp(`<!-- ${name}:start -->([\\s\\S]*?)<!-- ${name}:end -->`).exec(readme);
  if (!match?.[1]) throw new Error(`README has no ${name} section`);
  return match[1];
}

describe('README stays in step with the code', () => {
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
