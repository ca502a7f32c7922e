import { loadConfig } from '../config.js';
import { isVigilError } from '../domain/errors.js';

/**
 * `vigil serve` (the default): load and validate the config, start, and stop cleanly on
 * SIGTERM or SIGINT. A bad setting or a failed integrity check exits non-zero.
 */
async function main(argv: string[]): Promise<void> {
  const command = argv[0] ?? 'serve';
  if (command !== 'serve') {
    process.stderr.write(`unknown command "${command}"; usage: vigil serve\n`);
    process.exitCode = 2;
    return;
  }
  const config = loadConfig(process.env);
  // Loaded after the config is known good: a bad setting is reported at once, without
  // first loading LangChain, Fastify and the database drivers.
  const { startServer } = await import('../main.js');
  // VIGIL_DEMO_AGENT=off keeps the plain default agent (process tests that count events).
  const server = await startServer(config, { demoTokenDelayMs: Number(process.env.VIGIL_DEMO_TOKEN_DELAY_MS ?? 25), demoAgent: process.env.VIGIL_DEMO_AGENT !== 'off' });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    server.logger.info({ signal }, 'signal received');
    server.close().then(
      () => process.exit(0),
      (error: unknown) => {
        server.logger.error({ err: error }, 'error while stopping');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (isVigilError(error)) process.stderr.write(`vigil: ${error.code}: ${error.message}\n`);
  else process.stderr.write(`vigil: failed to start: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`);
  process.exit(1);
});
