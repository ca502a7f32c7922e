import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

export interface PackageInfo {
  version: string;
  /** The `engines.node` range, e.g. ">=24". */
  nodeRange: string;
}

/** package.json, found by walking up from this file (src/cli in the source tree, dist/cli once built). */
export function packageInfo(): PackageInfo {
  let directory = dirname(fileURLToPath(import.meta.url));
  for (let depth = 0; depth < 5; depth += 1) {
    try {
      const parsed = JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8')) as { name?: string; version?: string; engines?: { node?: string } };
      if (parsed.name === 'vigil') return { version: parsed.version ?? '0.0.0', nodeRange: parsed.engines?.node ?? '*' };
    } catch {
      // not here: one level up
    }
    directory = dirname(directory);
  }
  return { version: '0.0.0', nodeRange: '*' };
}

/** The lowest major version a `>=N` range allows (the only form vigil's package.json uses). */
export function minimumNodeMajor(range: string): number {
  const match = /^>=\s*(\d+)/.exec(range.trim());
  return match ? Number(match[1]) : 0;
}
