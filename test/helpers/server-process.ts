import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  output: () => string;
  /** Resolves with the exit code (or signal) once the process ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Start `vigil serve` as a real child process (the same command as `npm start`). */
export function spawnServer(environment: Record<string, string>): { child: ChildProcess; output: () => string; exited: ServerProcess['exited'] } {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/entry.ts', 'serve'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', VIGIL_PORT: '0', VIGIL_LOG_LEVEL: 'info', VIGIL_DEMO_TOKEN_DELAY_MS: '0', ...environment },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return { child, output: () => output, exited };
}

export async function startServerProcess(environment: Record<string, string>, timeoutMs = 90_000): Promise<ServerProcess> {
  const { child, output, exited } = spawnServer(environment);
  const started = Date.now();
  let url: string | undefined;
  let ended = false;
  void exited.then(() => (ended = true));
  while (!url) {
    const line = output()
      .split('\n')
      .find((candidate) => candidate.includes('"vigil is listening"'));
    if (line) url = (JSON.parse(line) as { address: string }).address;
    else if (ended) throw new Error(`server exited before listening:\n${output()}`);
    else if (Date.now() - started > timeoutMs) {
      child.kill('SIGKILL');
      throw new Error(`server did not start in ${timeoutMs} ms:\n${output()}`);
    }
    else await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    child,
    url,
    output,
    exited,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}
