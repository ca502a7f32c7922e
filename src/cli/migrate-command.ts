import pino from 'pino';
import { loadConfig } from '../config.js';

export interface MigrateCommandOptions {
  environment: Record<string, string | undefined>;
  output: NodeJS.WritableStream;
}

/** `vigil migrate`: apply pending migrations and print the schema's version. */
export async function migrateCommand({ environment, output }: MigrateCommandOptions): Promise<number> {
  const config = loadConfig(environment);
  const { migrateDatabase } = await import('../main.js');
  // Migration progress goes to stderr as JSON lines; stdout keeps the one-line summary.
  const logger = pino({ level: config.logLevel === 'silent' ? 'silent' : 'info' }, pino.destination(2));
  const status = await migrateDatabase(config, logger);
  const latest = status.migrations.at(-1);
  output.write(`${status.kind} (${status.location}): schema version ${latest?.version ?? 0} of ${status.known}${latest ? ` (${latest.name})` : ''}\n`);
  return 0;
}
