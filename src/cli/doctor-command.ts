import { access, constants, mkdir } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { loadConfig, type Config } from '../config.js';
import { isVigilError } from '../domain/errors.js';
import { minimumNodeMajor, packageInfo } from '../package-info.js';

export interface DoctorOptions {
  environment: Record<string, string | undefined>;
  output: NodeJS.WritableStream;
  /** Make one tiny call to a configured (non-demo) model. */
  modelCall: boolean;
  /** Bound on each network check (database, model, Telegram). */
  timeoutMs?: number;
}

export interface CheckResult {
  name: string;
  status: 'ok' | 'fail' | 'skip';
  detail: string;
  /** What to do about a failure. */
  fix?: string;
}

/**
 * `vigil doctor`: each check prints `ok`, `fail` (with a fix) or `skip`; the exit code is
 * 1 when any check failed. Checks that need the configuration are skipped when it is invalid
 * (the configuration check says why).
 */
export async function doctor(options: DoctorOptions): Promise<number> {
  const timeoutMs = options.timeoutMs ?? 20_000;
  const results: CheckResult[] = [];
  const report = (result: CheckResult) => {
    results.push(result);
    const mark = result.status === 'ok' ? 'ok  ' : result.status === 'fail' ? 'FAIL' : 'skip';
    options.output.write(`${mark}  ${result.name}: ${result.detail}\n`);
    if (result.fix) options.output.write(`      fix: ${result.fix}\n`);
  };

  report(checkNode());
  let config: Config | undefined;
  try {
    config = loadConfig(options.environment);
    report({ name: 'settings', status: 'ok', detail: describeSettings(config) });
  } catch (error) {
    report({ name: 'settings', status: 'fail', detail: messageOf(error), fix: 'correct the named settings (environment or VIGIL_CONFIG_FILE; the README lists them)' });
  }
  if (config) {
    const settings = config;
    if (!settings.databaseUrl) report(await checkDataDir(settings));
    report(await withTimeout('database', timeoutMs, () => checkDatabase(settings)));
    report(options.modelCall ? await withTimeout('model', timeoutMs, () => checkModel(settings)) : { name: 'model', status: 'skip', detail: `${settings.model} (test call skipped: --no-model-call)` });
    report(await withTimeout('telegram', timeoutMs, () => checkTelegram(settings)));
    report(await checkMcp(settings, options.environment));
  }
  const failed = results.filter((result) => result.status === 'fail').length;
  options.output.write(failed === 0 ? 'vigil doctor: all checks passed\n' : `vigil doctor: ${failed} check${failed === 1 ? '' : 's'} failed\n`);
  return failed === 0 ? 0 : 1;
}

function checkNode(): CheckResult {
  const { nodeRange } = packageInfo();
  const required = minimumNodeMajor(nodeRange);
  const major = Number(process.versions.node.split('.')[0]);
  if (major >= required) return { name: 'node', status: 'ok', detail: `${process.version} (vigil needs ${nodeRange})` };
  return {
    name: 'node',
    status: 'fail',
    detail: `${process.version}, but vigil needs ${nodeRange}`,
    fix: 'run vigil through npm (npm start, npx vigil …): the project brings its own Node in node_modules',
  };
}

function describeSettings(config: Config): string {
  const auth = config.authTokens.size > 0 ? `${new Set(config.authTokens.values()).size} user(s) with bearer tokens` : 'one local user, loopback only';
  return `listen ${config.host}:${config.port}, ${config.databaseUrl ? 'PostgreSQL' : 'SQLite'}, model ${config.model}, ${auth}`;
}

async function checkDataDir(config: Config): Promise<CheckResult> {
  try {
    await mkdir(config.dataDir, { recursive: true });
    await access(config.dataDir, constants.W_OK);
    return { name: 'data directory', status: 'ok', detail: `${config.dataDir} is writable` };
  } catch (error) {
    return { name: 'data directory', status: 'fail', detail: `${config.dataDir}: ${messageOf(error)}`, fix: 'set VIGIL_DATA_DIR to a directory this user may write' };
  }
}

async function checkDatabase(config: Config): Promise<CheckResult> {
  const { inspectDatabase } = await import('../main.js');
  try {
    // Read only: a check never creates the database or migrates it.
    const status = await inspectDatabase(config);
    const version = status.migrations.at(-1)?.version ?? 0;
    const where = `${status.kind} (${status.location})`;
    if (version === 0) {
      return { name: 'database', status: 'ok', detail: `${where} ${status.kind === 'postgres' ? 'reachable, ' : ''}no vigil tables yet: the server creates them at start (or vigil migrate)` };
    }
    const state = version === status.known ? 'up to date' : version > status.known ? `newer than this build (${status.known})` : `behind this build (${status.known})`;
    return { name: 'database', status: version >= status.known ? 'ok' : 'fail', detail: `${where} reachable, schema version ${version}, ${state}`, fix: version >= status.known ? undefined : 'run vigil migrate' };
  } catch (error) {
    return {
      name: 'database',
      status: 'fail',
      detail: messageOf(error),
      fix: config.databaseUrl ? 'check DATABASE_URL (host, port, user, database) and that PostgreSQL is running' : 'check VIGIL_DATA_DIR and that no other program holds the SQLite file',
    };
  }
}

async function checkModel(config: Config): Promise<CheckResult> {
  if (config.model === 'demo') return { name: 'model', status: 'ok', detail: 'the offline demo model (set VIGIL_MODEL for real answers)' };
  const { buildModels } = await import('../main.js');
  try {
    const reply = await buildModels(config)(config.model).invoke('Reply with the single word OK.');
    const text = typeof reply.content === 'string' ? reply.content : JSON.stringify(reply.content);
    return { name: 'model', status: 'ok', detail: `${config.model} answered (${text.trim().slice(0, 40) || 'an empty reply'})` };
  } catch (error) {
    return { name: 'model', status: 'fail', detail: `${config.model}: ${messageOf(error)}`, fix: 'check VIGIL_MODEL, the API key, and OPENAI_BASE_URL for a local server' };
  }
}

async function checkTelegram(config: Config): Promise<CheckResult> {
  const telegram = config.telegram;
  if (!telegram) return { name: 'telegram', status: 'skip', detail: 'not configured (VIGIL_TELEGRAM_BOT_TOKEN unset)' };
  try {
    const response = await fetch(`${telegram.apiRoot}/bot${telegram.botToken}/getMe`);
    const body = (await response.json()) as { ok?: boolean; result?: { username?: string }; description?: string };
    if (!body.ok) throw new Error(body.description ?? `HTTP ${response.status}`);
    return { name: 'telegram', status: 'ok', detail: `bot @${body.result?.username ?? '?'} answers (${telegram.mode} mode)` };
  } catch (error) {
    // The token is part of the URL: never echo the error's URL, only its message.
    return { name: 'telegram', status: 'fail', detail: messageOf(error).replaceAll(telegram.botToken, '***'), fix: 'check VIGIL_TELEGRAM_BOT_TOKEN (from @BotFather) and VIGIL_TELEGRAM_API_ROOT' };
  }
}

async function checkMcp(config: Config, environment: Record<string, string | undefined>): Promise<CheckResult> {
  const commands = config.mcpStdioCommands.filter((command) => command !== '*');
  if (config.mcpStdioCommands.length === 0) return { name: 'mcp', status: 'skip', detail: 'no stdio MCP commands allowed (VIGIL_MCP_STDIO_COMMANDS unset); HTTP MCP servers are set per agent' };
  const missing: string[] = [];
  for (const command of commands) if (!(await onPath(command, environment.PATH ?? ''))) missing.push(command);
  if (missing.length > 0) return { name: 'mcp', status: 'fail', detail: `not found on PATH: ${missing.join(', ')}`, fix: 'install them or remove them from VIGIL_MCP_STDIO_COMMANDS' };
  return { name: 'mcp', status: 'ok', detail: `stdio commands allowed: ${config.mcpStdioCommands.join(', ')}` };
}

async function onPath(command: string, path: string): Promise<boolean> {
  const candidates = command.includes('/') ? [command] : path.split(delimiter).filter(Boolean).map((directory) => join(directory, command));
  for (const candidate of candidates) {
    try {
      await access(candidate, constants.X_OK);
      return true;
    } catch {
      // next
    }
  }
  return false;
}

async function withTimeout(name: string, timeoutMs: number, check: () => Promise<CheckResult>): Promise<CheckResult> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<CheckResult>((resolve) => {
    timer = setTimeout(() => resolve({ name, status: 'fail', detail: `no answer within ${timeoutMs} ms`, fix: 'check that the service is up and reachable' }), timeoutMs);
  });
  try {
    return await Promise.race([check(), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function messageOf(error: unknown): string {
  if (isVigilError(error)) return error.message;
  return error instanceof Error ? error.message : String(error);
}
