import { loadConfig } from '../config.js';

/**
 * `vigil serve`: load and validate the config, start, and stop cleanly on SIGTERM or
 * SIGINT. A bad setting or a failed integrity check exits non-zero.
 */
export async function serve(): Promise<void> {
  const config = loadConfig(process.env);
  // Loaded after the config is known good: a bad setting is reported at once, without
  // first loading LangChain, Fastify and the database drivers.
  const { startServer } = await import('../main.js');
  const server = await startServer(config, { demoTokenDelayMs: Number(process.env.VIGIL_DEMO_TOKEN_DELAY_MS ?? 25) });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) {
      // A second signal: the operator will not wait for the grace period.
      server.logger.warn({ signal }, 'second signal: exiting at once');
      process.exit(1);
    }
    stopping = true;
    server.logger.info({ signal }, 'signal received; stopping gracefully (send it again to exit at once)');
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
