#!/usr/bin/env node
// The `vigil` command: runs the compiled build (npm install's `prepare`, or `npm run build`).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/cli/entry.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write('vigil: the build is missing; run `npm run build` (npm install does it) in the vigil directory\n');
  process.exit(1);
}
await import(entry.href);
