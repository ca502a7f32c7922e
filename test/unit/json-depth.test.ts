import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../../src/http/json-depth.js';

/** Arrays `levels` deep, built without recursion. */
function nested(levels: number): unknown {
  let value: unknown = [];
  for (let level = 1; level < levels; level += 1) value = [value];
  return value;
}

describe('the JSON nesting bound', () => {
  it('counts objects and arrays, the value itself as level 1, scalars as nothing', () => {
    expect(nestsDeeperThan('text', 0)).toBe(false);
    expect(nestsDeeperThan({ metadata: { a: [] } }, 3)).toBe(false);
    expect(nestsDeeperThan({ metadata: { a: [] } }, 2)).toBe(true);
    expect(nestsDeeperThan({ a: 1, b: [1, 2, { c: 'x' }] }, 3)).toBe(false);
    expect(nestsDeeperThan({ a: 1, b: [1, 2, { c: {} }] }, 3)).toBe(true);
    expect(nestsDeeperThan(nested(MAX_JSON_DEPTH), MAX_JSON_DEPTH)).toBe(false);
    expect(nestsDeeperThan(nested(MAX_JSON_DEPTH + 1), MAX_JSON_DEPTH)).toBe(true);
  });

  it('walks without recursion: a million levels, or a million siblings, do not exhaust the stack', () => {
    expect(nestsDeeperThan(nested(1_000_000), MAX_JSON_DEPTH)).toBe(true);
    expect(nestsDeeperThan(new Array(1_000_000).fill([]), MAX_JSON_DEPTH)).toBe(false);
  });

  it('is the bound the README states', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    expect(readme).toContain(`nest objects and arrays at most ${MAX_JSON_DEPTH} levels deep`);
  });
});
