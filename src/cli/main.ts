import { Command, Option } from 'commander';
import { isVigilError } from '../domain/errors.js';
import { minimumNodeMajor, packageInfo } from '../package-info.js';

/**
 * The `vigil` command. Each subcommand loads what it needs when it runs: `--help` and
 * `--version` answer at once, without loading LangChain, Fastify or a database driver.
 */
export function buildProgram(): Command {
  const program = new Command('vigil')
    .description('A server for LLM agents that act on their own.')
    .version(packageInfo().version, '-v, --version', 'print the version')
    .showHelpAfterError('(run with --help for usage)');

  // serve is the default command, so commander hands it any word that names no command
  // ("too many arguments for 'serve'"): a word before serve's options is a mistyped command.
  program.hook('preSubcommand', (_program, subcommand) => {
    const first = program.args[0];
    if (subcommand.name() === 'serve' && first !== undefined && first !== 'serve' && !first.startsWith('-')) unknownCommand(program);
  });

  program
    .command('serve', { isDefault: true })
    .description('start the server (settings from the environment and VIGIL_CONFIG_FILE; see the README)')
    .action(async () => {
      const { serve } = await import('./serve-command.js');
      await serve();
    });

  program
    .command('chat')
    .description('chat with an agent in the terminal; replies stream, and replies the agent sends on its own arrive marked with why')
    .option('-a, --agent <agentId>', 'the agent of a new thread (default: your default agent)')
    .option('-t, --thread <threadId>', 'continue this thread instead of starting one')
    .addOption(new Option('-u, --url <url>', 'the server (default: where VIGIL_HOST and VIGIL_PORT, or VIGIL_CONFIG_FILE, have this machine\'s server listen: http://127.0.0.1:8787 unless set)').env('VIGIL_URL'))
    .addOption(new Option('--token <token>', 'bearer token, when the server has VIGIL_AUTH_TOKENS').env('VIGIL_TOKEN'))
    .action(async (options: { agent?: string; thread?: string; url?: string; token?: string }) => {
      const { chat, localServerUrl } = await import('./chat-command.js');
      const url = options.url ?? localServerUrl(process.env);
      process.exitCode = await chat({ ...options, url, input: process.stdin, output: process.stdout, errorOutput: process.stderr });
    });

  program
    .command('doctor')
    .description('check this machine and these settings: Node, the database and its migrations, the data directory, the model, Telegram and MCP')
    .option('--no-model-call', 'skip the one tiny test call to a configured model')
    .action(async (options: { modelCall: boolean }) => {
      const { doctor } = await import('./doctor-command.js');
      process.exitCode = await doctor({ environment: process.env, output: process.stdout, modelCall: options.modelCall });
    });

  program
    .command('migrate')
    .description('bring the database schema up to date (the server also does this at start) and print its version')
    .action(async () => {
      const { migrateCommand } = await import('./migrate-command.js');
      process.exitCode = await migrateCommand({ environment: process.env, output: process.stdout });
    });

  return program;
}

/** commander's own "unknown command 'x'" with its closest-name suggestion ("Did you mean chat?"). */
function unknownCommand(program: Command): never {
  const own = (program as Command & { unknownCommand?: () => never }).unknownCommand;
  if (typeof own === 'function') return own.call(program);
  return program.error(`error: unknown command '${program.args[0]}'`, { code: 'commander.unknownCommand' });
}

export async function runCli(argv: readonly string[], environment: Record<string, string | undefined> = process.env, nodeVersion = process.versions.node): Promise<void> {
  try {
    const program = buildProgram();
    // Run by an older Node (a global install, `node bin/vigil.js`), a command would fail on
    // what that Node lacks ("No such built-in module: node:sqlite", "WebSocket is not
    // defined"). Say what is wrong instead; doctor still runs, to report it among its checks.
    // preAction: a command's --help still answers (it runs no action).
    program.hook('preAction', (_program, action) => {
      if (action.name() !== 'doctor') refuseOldNode(nodeVersion);
    });
    await program.parseAsync([...argv], { from: 'user' });
  } catch (error) {
    process.stderr.write(`vigil: ${describeFailure(error)}\n`);
    // The stack is for whoever debugs vigil, not for the person running it.
    if (DEBUG_LEVELS.has(environment.VIGIL_LOG_LEVEL ?? '') && error instanceof Error && error.stack) process.stderr.write(`${error.stack}\n`);
    process.exitCode = 1;
  }
}

const DEBUG_LEVELS = new Set(['debug', 'trace']);

/** Throws, with what to do, when `nodeVersion` is older than package.json's engines allow. */
function refuseOldNode(nodeVersion: string): void {
  const { nodeRange } = packageInfo();
  if (Number(nodeVersion.split('.')[0]) >= minimumNodeMajor(nodeRange)) return;
  throw new Error(`this is Node ${nodeVersion}, and vigil needs ${nodeRange}: run it through npm (npm start, npx vigil …), which uses the Node the project brings in node_modules`);
}

/**
 * One line for a command that failed: a vigil error's code and message; any other error's
 * message (an AggregateError's, say two refused connections, has none of its own: its
 * errors' messages), with the system error code (EEXIST, ECONNREFUSED) and its cause.
 */
export function describeFailure(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  let text = isVigilError(error) ? `${error.code}: ${error.message}` : messageOf(error);
  const code = systemCodeOf(error);
  if (code && !text.includes(code)) text += ` (${code})`;
  const cause = error.cause instanceof Error ? messageOf(error.cause) : undefined;
  if (cause && !text.includes(cause)) text += `: ${cause}`;
  return text;
}

function messageOf(error: Error): string {
  if (error.message) return error.message;
  if (error instanceof AggregateError) {
    const messages = [...new Set(error.errors.map((inner: unknown) => (inner instanceof Error ? inner.message : String(inner))).filter(Boolean))];
    if (messages.length > 0) return messages.join('; ');
  }
  return error.name;
}

/** A Node system error's code (here or on its cause), such as ECONNREFUSED. */
function systemCodeOf(error: Error): string | undefined {
  for (const candidate of [error, error.cause]) {
    const code = candidate && typeof candidate === 'object' && 'code' in candidate ? candidate.code : undefined;
    if (typeof code === 'string' && /^E[A-Z0-9_]+$/.test(code)) return code;
  }
  return undefined;
}
