// Compile src/ to dist/ when dist/ is missing or older than any source file, so that
// `npm start` always runs the code in the tree, and runs it compiled (no tsx at run time).
// `npm install` calls this through `prepare`; `npm start` calls it again (cheap when fresh).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const stamp = join(root, 'dist', '.build-stamp');
const inputs = [join(root, 'src'), join(root, 'tsconfig.json'), join(root, 'tsconfig.build.json'), join(root, 'package.json')];

function newest(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let latest = stat.mtimeMs;
  for (const entry of readdirSync(path)) latest = Math.max(latest, newest(join(path, entry)));
  return latest;
}

const built = existsSync(stamp) ? statSync(stamp).mtimeMs : 0;
const source = Math.max(...inputs.filter((path) => existsSync(path)).map(newest));
if (built >= source && !process.argv.includes('--force')) process.exit(0);

const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
if (!existsSync(tsc)) {
  // An install without dev dependencies ships dist/ already built; nothing to do.
  if (existsSync(join(root, 'dist', 'cli', 'entry.js'))) process.exit(0);
  console.error('vigil: cannot build: TypeScript is not installed (run npm install)');
  process.exit(1);
}
console.error('vigil: compiling src/ → dist/ …');
const result = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
if (result.status !== 0) process.exit(result.status ?? 1);
writeFileSync(stamp, `${new Date().toISOString()}\n`);
