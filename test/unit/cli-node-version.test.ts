import { afterEach, describe, expect, it, vi } from 'vitest';
import { runCli } from '../../src/cli/main.js';

/** What runCli wrote to stderr, and the exit code it set (both restored afterwards). */
async function run(argv: string[], nodeVersion: string): Promise<{ stderr: string; exitCode: typeof process.exitCode }> {
  const written: string[] = [];
  const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    written.push(String(chunk));
    return true;
  });
  const before = process.exitCode;
  try {
    await runCli(argv, {}, nodeVersion);
    return { stderr: written.join(''), exitCode: process.exitCode };
  } finally {
    spy.mockRestore();
    process.exitCode = before;
  }
}

describe('vigil on a Node older than it needs', () => {
  afterEach(() => vi.restoreAllMocks());

  it.each([[[]], [['serve']], [['chat']], [['migrate']]])('%j says which Node it needs and how to run it, in one line, exit 1 (not "No such built-in module: node:sqlite")', async (argv) => {
    const { stderr, exitCode } = await run(argv, '20.20.2');
    expect(stderr).toBe('vigil: this is Node 20.20.2, and vigil needs >=24: run it through npm (npm start, npx vigil …), which uses the Node the project brings in node_modules\n');
    expect(exitCode).toBe(1);
  });

  it('on the Node it needs, the command runs (its own refusal, not the Node check)', async () => {
    const { stderr, exitCode } = await run(['chat', '--thread', ''], process.versions.node);
    expect(stderr).not.toContain('vigil needs');
    expect(stderr).toContain('--thread');
    expect(exitCode).toBe(1);
  });
});
