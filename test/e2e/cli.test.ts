import { spawn, spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { PassThrough, Writable } from 'node:stream';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { ALICE, BOB, startTestServer, type TestServer } from '../helpers/test-server.js';
import { makeTempDir, removeTempDir } from '../helpers/temp-dir.js';
import { dropSchema, postgresTarget, randomSchemaName } from '../helpers/postgres.js';
import { existsSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import { chat } from '../../src/cli/chat-command.js';
import { waitFor } from '../helpers/wait-for.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = 'bin/vigil.js';

/** The built `vigil` command, as a user runs it (npm install builds dist/ through `prepare`). */
function vigil(args: string[], environment: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', VIGIL_LOG_LEVEL: 'silent', ...environment },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** A loopback port nothing listens on (it was free a moment ago). */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

beforeAll(() => {
  // Cheap when dist/ is fresh; compiles when a source file changed since the last build.
  const build = spawnSync(process.execPath, ['scripts/build-if-stale.mjs'], { cwd: ROOT, encoding: 'utf8', timeout: 240_000 });
  if (build.status !== 0) throw new Error(`build failed:\n${build.stdout}\n${build.stderr}`);
}, 240_000);

describe('the vigil command', () => {
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await makeTempDir();
  });
  afterAll(async () => {
    await removeTempDir(dataDir);
  });

  it('prints its version and help for every command', () => {
    const version = vigil(['--version']);
    expect(version.code).toBe(0);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    for (const command of ['serve', 'chat', 'doctor', 'migrate']) {
      const help = vigil([command, '--help']);
      expect(help.code, command).toBe(0);
      expect(help.stdout).toContain(`Usage: vigil ${command}`);
    }
    const unknown = vigil(['frobnicate']);
    expect(unknown.code).not.toBe(0);
  });

  it('a mistyped command is called unknown, with the closest command suggested (serve being the default does not swallow it)', () => {
    const typo = vigil(['chta']);
    expect(typo.code).toBe(1);
    expect(typo.stderr).toContain("unknown command 'chta'");
    expect(typo.stderr).toContain('Did you mean chat?');
    expect(typo.stderr).not.toContain('serve');
    const nonsense = vigil(['frobnicate', '--agent', 'x']);
    expect(nonsense.code).toBe(1);
    expect(nonsense.stderr).toContain("unknown command 'frobnicate'");
    // serve itself still refuses arguments it does not take.
    const extra = vigil(['serve', 'extra']);
    expect(extra.code).toBe(1);
    expect(extra.stderr).toContain("too many arguments for 'serve'");
  });

  it('migrate brings a new SQLite database to the current schema version', () => {
    const result = vigil(['migrate'], { VIGIL_DATA_DIR: dataDir });
    expect(result.code, result.stderr).toBe(0);
    const match = /^sqlite \(.*\): schema version (\d+) of (\d+)/.exec(result.stdout);
    expect(match, result.stdout).not.toBeNull();
    expect(match![1]).toBe(match![2]);
  });

  it('a failing command prints one line, not a stack trace (the stack only with VIGIL_LOG_LEVEL=debug)', async () => {
    const notADirectory = join(dataDir, 'a-file');
    await writeFile(notADirectory, '');
    const fileAsDataDir = vigil(['migrate'], { VIGIL_DATA_DIR: notADirectory });
    expect(fileAsDataDir.code).toBe(1);
    expect(fileAsDataDir.stderr).toMatch(/^vigil: .*EEXIST.*a-file.*\n$/);
    expect(fileAsDataDir.stderr.trim().split('\n')).toHaveLength(1);
    const noDatabase = vigil(['migrate'], { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' });
    expect(noDatabase.code).toBe(1);
    expect(noDatabase.stderr).toMatch(/^vigil: .*ECONNREFUSED.*\n$/);
    expect(noDatabase.stderr.trim().split('\n')).toHaveLength(1);
    const debugging = vigil(['migrate'], { VIGIL_DATA_DIR: notADirectory, VIGIL_LOG_LEVEL: 'debug' });
    expect(debugging.code).toBe(1);
    expect(debugging.stderr).toMatch(/^vigil: .*EEXIST/);
    expect(debugging.stderr).toMatch(/\n +at /);
  });

  it('doctor passes every check on a working setup and exits 0', () => {
    const result = vigil(['doctor'], { VIGIL_DATA_DIR: dataDir });
    expect(result.code, result.stdout).toBe(0);
    for (const check of ['node', 'settings', 'data directory', 'database', 'model']) expect(result.stdout).toMatch(new RegExp(`^ok +${check}:`, 'm'));
    expect(result.stdout).toContain('all checks passed');
  });

  it('doctor reads the schema version and changes nothing: no database made, none migrated (SQLite)', async () => {
    const fresh = await makeTempDir();
    onTestFinished(() => removeTempDir(fresh));
    const untouched = vigil(['doctor', '--no-model-call'], { VIGIL_DATA_DIR: fresh });
    expect(untouched.code, untouched.stdout).toBe(0);
    expect(untouched.stdout).toMatch(/^ok +database: sqlite .*no vigil tables yet/m);
    expect(existsSync(join(fresh, 'vigil.sqlite'))).toBe(false);
    // A database a version behind this build: doctor says so (and how to fix it), and leaves it behind.
    expect(vigil(['migrate'], { VIGIL_DATA_DIR: fresh }).code).toBe(0);
    const file = join(fresh, 'vigil.sqlite');
    const database = new DatabaseSync(file);
    const latest = database.prepare('SELECT max(version) AS version FROM vigil_migrations').get() as { version: number };
    database.prepare('DELETE FROM vigil_migrations WHERE version = ?').run(latest.version);
    database.close();
    const behind = vigil(['doctor', '--no-model-call'], { VIGIL_DATA_DIR: fresh });
    expect(behind.code).toBe(1);
    expect(behind.stdout).toMatch(new RegExp(`^FAIL +database: .*schema version ${latest.version - 1}, behind this build \\(${latest.version}\\)`, 'm'));
    expect(behind.stdout).toContain('fix: run vigil migrate');
    const after = new DatabaseSync(file, { readOnly: true });
    expect((after.prepare('SELECT max(version) AS version FROM vigil_migrations').get() as { version: number }).version).toBe(latest.version - 1);
    after.close();
  });

  it('doctor changes nothing on PostgreSQL either: a schema it finds empty stays uncreated', async (context) => {
    const target = await postgresTarget();
    if (!target.available) return context.skip(`PostgreSQL did not answer: ${target.problem}`);
    const schema = randomSchemaName('vigil_doctor');
    onTestFinished(() => dropSchema(schema));
    const result = vigil(['doctor', '--no-model-call'], { DATABASE_URL: target.url, VIGIL_DATABASE_SCHEMA: schema });
    expect(result.code, result.stdout).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`^ok +database: postgres \\(schema ${schema}\\) reachable, no vigil tables yet`, 'm'));
    const client = new pg.Client({ connectionString: target.url });
    await client.connect();
    try {
      expect((await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema])).rowCount).toBe(0);
    } finally {
      await client.end();
    }
  });

  it('doctor names a failing check with its fix and exits non-zero', () => {
    const unreachable = vigil(['doctor', '--no-model-call'], { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' });
    expect(unreachable.code).toBe(1);
    expect(unreachable.stdout).toMatch(/^FAIL +database: /m);
    expect(unreachable.stdout).toMatch(/fix: check DATABASE_URL/);
    const badSetting = vigil(['doctor'], { VIGIL_PORT: 'eighty' });
    expect(badSetting.code).toBe(1);
    expect(badSetting.stdout).toMatch(/^FAIL +settings: .*VIGIL_PORT/m);
  });
});

describe('vigil chat', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ kind: 'sqlite' });
  });
  afterAll(async () => {
    await server?.destroy();
  });

  /**
   * `vigil chat` from the source tree, with its input held open until the test ends it.
   * `--url` is the test server's unless `url` says otherwise (null: none given).
   */
  function startChat(args: string[], token: string, options: { url?: string | null; environment?: Record<string, string> } = {}) {
    const url = options.url === undefined ? server.url : options.url;
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/entry.ts', 'chat', ...(url === null ? [] : ['--url', url]), ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', VIGIL_TOKEN: token, ...options.environment },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let output = '';
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
      stdout += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
      stderr += chunk.toString('utf8');
    });
    let ended = false;
    const exited = new Promise<number | null>((resolve) =>
      child.once('exit', (code) => {
        ended = true;
        resolve(code);
      }),
    );
    return { child, output: () => output, stdout: () => stdout, stderr: () => stderr, exited, ended: () => ended };
  }

  /** A chat that is given no input and must fail at once: its exit code and streams. */
  async function failedChat(args: string[], token: string, options: { url?: string | null; environment?: Record<string, string> } = {}) {
    const chat = startChat(args, token, options);
    chat.child.stdin.end();
    const code = await chat.exited;
    return { code, stdout: chat.stdout(), stderr: chat.stderr() };
  }

  it('streams a reply, then shows a follow-up the agent sends on its own, marked with why', async () => {
    const agent = await server.request('POST', '/api/agents', {
      body: {
        id: 'cli-agent',
        name: 'CLI agent',
        autonomy: {
          enabled: true,
          delaysMs: { check_in: 300, question_unanswered: 300, task_incomplete: 300, waiting_for_decision: 300 },
          minDelayMs: 10,
          maxPerSilence: 1,
        },
      },
    });
    expect(agent.status, JSON.stringify(agent.body)).toBe(201);
    const chat = startChat(['--agent', 'cli-agent'], ALICE.token);
    try {
      await waitFor(() => chat.output().includes('Type a message'), 30_000, 'the chat to open its thread');
      chat.child.stdin.write('what is the plan?\n');
      await waitFor(() => chat.output().includes('You said: "what is the plan?"'), 30_000, 'the streamed reply');
      // The demo reply ends with a question, so a follow-up comes by itself.
      await waitFor(() => /\[followed up: [^\]]+\]\nagent> \[demo model\] Following up/.test(chat.output()), 30_000, 'the follow-up');
      // The synthetic prompt that started the follow-up is never shown as the person's words.
      expect(chat.output()).not.toMatch(/you> .*AUTONOMOUS/);
    } catch (error) {
      throw new Error(`${String(error)}; the chat printed:\n${chat.output()}`);
    } finally {
      chat.child.stdin.end();
    }
    expect(await chat.exited).toBe(0);
  }, 120_000);

  it('I12: another user cannot open someone else\'s thread', async () => {
    const thread = await server.request('POST', '/api/threads', { body: {} });
    expect(thread.status).toBe(201);
    const chat = startChat(['--thread', thread.body.id], BOB.token);
    chat.child.stdin.end();
    expect(await chat.exited).toBe(1);
    expect(chat.stderr()).toContain('THREAD_NOT_FOUND');
    expect(chat.stderr()).not.toContain('is the server running');
  });

  it('a failure goes to stderr; only an unreachable server gets "is the server running"; a bad --url is called invalid', async () => {
    const unknownAgent = await failedChat(['--agent', 'no-such-agent'], ALICE.token);
    expect(unknownAgent.code).toBe(1);
    expect(unknownAgent.stdout).toBe('');
    expect(unknownAgent.stderr).toContain('AGENT_NOT_FOUND');
    expect(unknownAgent.stderr).not.toContain('is the server running');

    const badToken = await failedChat([], 'not-a-configured-token-at-all');
    expect(badToken.code).toBe(1);
    expect(badToken.stdout).toBe('');
    expect(badToken.stderr).toContain('UNAUTHORIZED');
    expect(badToken.stderr).not.toContain('is the server running');

    const closedPort = await freePort();
    const unreachable = await failedChat([], ALICE.token, { url: `http://127.0.0.1:${closedPort}` });
    expect(unreachable.code).toBe(1);
    expect(unreachable.stdout).toBe('');
    expect(unreachable.stderr).toContain(`cannot reach http://127.0.0.1:${closedPort} (ECONNREFUSED) (is the server running at http://127.0.0.1:${closedPort}?)`);

    const notAUrl = await failedChat([], ALICE.token, { url: 'notaurl' });
    expect(notAUrl.code).toBe(1);
    expect(notAUrl.stdout).toBe('');
    expect(notAUrl.stderr).toContain('invalid server URL "notaurl"');
    expect(notAUrl.stderr).not.toContain('Failed to parse URL');
  });

  it('without VIGIL_URL or --url, finds the server where VIGIL_PORT has it listen', async () => {
    const port = new URL(server.url).port;
    const chat = startChat([], ALICE.token, { url: null, environment: { VIGIL_PORT: port } });
    try {
      await waitFor(() => chat.output().includes('Type a message') || chat.ended(), 30_000, 'the chat to reach the server on VIGIL_PORT');
      expect(chat.output()).toContain('Type a message');
    } catch (error) {
      throw new Error(`${String(error)}; the chat printed:\n${chat.output()}`);
    } finally {
      chat.child.stdin.end();
    }
    expect(await chat.exited).toBe(0);
    const badPort = await failedChat([], ALICE.token, { url: null, environment: { VIGIL_PORT: 'eighty' } });
    expect(badPort.code).toBe(1);
    expect(badPort.stderr).toMatch(/CONFIG_INVALID: .*VIGIL_PORT/);
  });

  it('refuses an empty --thread or --agent instead of quietly starting a new thread', async () => {
    const before = await server.request('GET', '/api/threads?limit=100');
    for (const args of [['--thread', ''], ['--thread', ' '], ['--agent', '']]) {
      const refused = await failedChat(args, ALICE.token);
      expect(refused.code, args.join(' ')).toBe(1);
      expect(refused.stdout).toBe('');
      expect(refused.stderr).toContain(`${args[0]} needs an id`);
    }
    const after = await server.request('GET', '/api/threads?limit=100');
    expect(after.body.threads).toHaveLength(before.body.threads.length);
  });

  it('makes its thread with the first message: leaving at once leaves no empty thread behind', async () => {
    const threadCount = async () => ((await server.request('GET', '/api/threads?limit=100')).body.threads as unknown[]).length;
    const before = await threadCount();
    for (const leave of ['', '/quit\n']) {
      const chat = startChat([], ALICE.token);
      await waitFor(() => chat.output().includes('Type a message') || chat.ended(), 30_000, 'the chat to start');
      chat.child.stdin.end(leave);
      expect(await chat.exited, chat.output()).toBe(0);
    }
    expect(await threadCount()).toBe(before);
    // The first message makes the thread, and its reply streams as before.
    const chat = startChat([], ALICE.token);
    try {
      await waitFor(() => chat.output().includes('Type a message'), 30_000, 'the chat to start');
      chat.child.stdin.write('hello there\n');
      await waitFor(() => chat.stdout().includes('You said: "hello there"'), 30_000, 'the reply');
      const threadId = /\(thread (\S+) with agent default\)/.exec(chat.stdout())?.[1];
      expect(threadId, chat.stdout()).toBeDefined();
      const history = await server.request('GET', `/api/threads/${threadId}/history`);
      expect(history.body.messages.map((message: { role: string }) => message.role)).toEqual(['user', 'assistant']);
    } catch (error) {
      throw new Error(`${String(error)}; the chat printed:\n${chat.output()}`);
    } finally {
      chat.child.stdin.end();
    }
    expect(await chat.exited).toBe(0);
    expect(await threadCount()).toBe(before + 1);
  });

  it('piped lines: every message gets its whole reply before the chat leaves at the end of input', async () => {
    // Replies that take a moment, so the first ends while the others still wait.
    const slow = await startTestServer({ kind: 'sqlite' }, { demoTokenDelayMs: 10 });
    const chat = startChat([], ALICE.token, { url: slow.url });
    onTestFinished(() => slow.destroy());
    chat.child.stdin.end('Hello\nWhat can you do?\nAnd a third one\n');
    const code = await chat.exited;
    expect(chat.stderr()).toBe('');
    for (const line of ['Hello', 'What can you do?', 'And a third one']) expect(chat.stdout()).toContain(`You said: "${line}"`);
    // Each reply is whole: three run ends, three prompts after them.
    expect(chat.stdout().match(/agent> /g)).toHaveLength(3);
    expect(code).toBe(0);
  });

  it('piped lines: a message the server refuses is said on stderr and sets the exit code; the others are still answered', async () => {
    const chat = startChat([], ALICE.token);
    // Longer than a message may be (100,000 characters): refused with VALIDATION_FAILED.
    chat.child.stdin.end(`Hello\n${'x'.repeat(100_001)}\nBye\n`);
    const code = await chat.exited;
    expect(chat.stderr()).toMatch(/^\[error VALIDATION_FAILED: [^\]]*\]\n$/);
    expect(chat.stdout()).toContain('You said: "Hello"');
    expect(chat.stdout()).toContain('You said: "Bye"');
    expect(code).toBe(1);
  });
});

/** A server on a fixed port that can be stopped and started again (a restart, or a server that is down a while). */
async function startRestartableServer(options: { demoTokenDelayMs?: number } = {}) {
  const port = await freePort();
  const place = { dataDir: await makeTempDir(), schema: randomSchemaName() };
  const start = () => startTestServer({ kind: 'sqlite' }, { environment: { VIGIL_PORT: String(port) }, place, ...options });
  let current: TestServer | undefined = await start();
  return {
    url: `http://127.0.0.1:${port}`,
    server: () => current!,
    stop: async () => {
      await current?.close();
      current = undefined;
    },
    start: async () => {
      current = await start();
    },
    destroy: async () => {
      if (current) await current.destroy();
      else await removeTempDir(place.dataDir);
    },
  };
}

/**
 * A TCP relay in front of a server, to cut the network between the chat and a server that
 * stays up: drop() ends every connection and refuses new ones until restore(); swallow()
 * keeps what the chat sends from reaching the server (counting it).
 */
async function startRelay(targetUrl: string) {
  const target = new URL(targetUrl);
  const port = await freePort();
  const sockets = new Set<Socket>();
  let swallowing = false;
  let swallowed = 0;
  const relay = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    client.on('data', (chunk: Buffer) => {
      if (swallowing) swallowed += chunk.length;
      else upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  const listen = () => new Promise<void>((resolve) => relay.listen(port, '127.0.0.1', resolve));
  await listen();
  return {
    url: `http://127.0.0.1:${port}`,
    swallow: () => {
      swallowing = true;
    },
    swallowed: () => swallowed,
    drop: async () => {
      const closed = new Promise<void>((resolve) => relay.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
    restore: async () => {
      swallowing = false;
      await listen();
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      if (relay.listening) await new Promise<void>((resolve) => relay.close(() => resolve()));
    },
  };
}

describe('vigil chat when the connection drops', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ kind: 'sqlite' });
  });
  afterAll(async () => {
    await server?.destroy();
  });

  /** `vigil chat` from the source tree against `url`, its input held open until the test ends it. */
  function startChat(url: string, args: string[] = []) {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/entry.ts', 'chat', '--url', url, ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', VIGIL_TOKEN: ALICE.token },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    let ended = false;
    const exited = new Promise<number | null>((resolve) =>
      child.once('exit', (code) => {
        ended = true;
        resolve(code);
      }),
    );
    onTestFinished(() => {
      if (!ended) child.kill('SIGKILL');
    });
    const chat = {
      child,
      stdout: () => stdout,
      stderr: () => stderr,
      exited,
      /** Wait for the condition; a chat that exits first, or never gets there, fails with what it printed. */
      until: async (condition: () => boolean, what: string) => {
        try {
          await waitFor(() => condition() || ended, 10_000, what);
        } catch (error) {
          throw new Error(`${String(error)}; the chat printed:\n${stdout}\n--- stderr:\n${stderr}`);
        }
        if (!condition()) throw new Error(`the chat exited before ${what}; it printed:\n${stdout}\n--- stderr:\n${stderr}`);
      },
    };
    return chat;
  }
  const threadIdOf = (stdout: string) => /\(thread (\S+) with agent/.exec(stdout)?.[1];

  it('the server stops: the chat says so, keeps a line typed meanwhile, sends it once the server is back, and leaves with exit 0', async () => {
    const server = await startRestartableServer();
    onTestFinished(() => server.destroy());
    const chat = startChat(server.url);
    chat.child.stdin.write('first\n');
    await chat.until(() => chat.stdout().includes('You said: "first"'), 'the first reply');
    await server.stop();
    await chat.until(() => chat.stderr().includes(`vigil chat: connection to ${server.url} lost`), 'the chat to say the connection was lost');
    chat.child.stdin.write('second\n');
    await chat.until(() => chat.stderr().includes('not connected: "second" will be sent once the connection'), 'the chat to say the line waits');
    await server.start();
    await chat.until(() => chat.stdout().includes('You said: "second"'), 'the reply to the line typed while disconnected');
    expect(chat.stderr()).toContain(`vigil chat: reconnected to ${server.url}`);
    // The same thread: both messages are in it, once each.
    const threadId = threadIdOf(chat.stdout());
    const history = await server.server().request('GET', `/api/threads/${threadId}/history`);
    expect(history.body.messages.filter((message: { role: string }) => message.role === 'user').map((message: { content: string }) => message.content)).toEqual(['first', 'second']);
    chat.child.stdin.end();
    expect(await chat.exited).toBe(0);
  });

  it('--thread: shows the thread, continues it, and resumes it after a restart', async () => {
    const restartable = await startRestartableServer();
    onTestFinished(() => restartable.destroy());
    const thread = await restartable.server().request('POST', '/api/threads', { body: {} });
    const first = await restartable.server().request('POST', `/api/threads/${thread.body.id}/messages`, { body: { content: 'said before' } });
    expect(first.status).toBe(200);
    const chat = startChat(restartable.url, ['--thread', thread.body.id]);
    await chat.until(() => chat.stdout().includes('you> said before\nagent> [demo model] You said: "said before"'), 'the history');
    chat.child.stdin.write('and now\n');
    await chat.until(() => chat.stdout().includes('You said: "and now"'), 'the reply');
    await restartable.stop();
    await chat.until(() => chat.stderr().includes('lost'), 'the chat to say the connection was lost');
    await restartable.start();
    await chat.until(() => chat.stderr().includes('reconnected'), 'the chat to reconnect');
    chat.child.stdin.write('after the restart\n');
    await chat.until(() => chat.stdout().includes('You said: "after the restart"'), 'the reply after the restart');
    chat.child.stdin.end();
    expect(await chat.exited).toBe(0);
  });

  it('end of input while the server is down: leaves at once when nothing waits for a reply', async () => {
    const server = await startRestartableServer();
    onTestFinished(() => server.destroy());
    const chat = startChat(server.url);
    chat.child.stdin.write('hello\n');
    await chat.until(() => chat.stdout().includes('You said: "hello"'), 'the reply');
    await server.stop();
    await chat.until(() => chat.stderr().includes('lost'), 'the chat to say the connection was lost');
    chat.child.stdin.end();
    expect(await chat.exited).toBe(0);
  });

  it('a dropped connection resumes after the last event seen: a reply given meanwhile is shown, nothing twice', async () => {
    const relay = await startRelay(server.url);
    onTestFinished(() => relay.close());
    const chat = startChat(relay.url);
    chat.child.stdin.write('before the drop\n');
    await chat.until(() => chat.stdout().includes('You said: "before the drop"'), 'the first reply');
    const threadId = threadIdOf(chat.stdout());
    await relay.drop();
    await chat.until(() => chat.stderr().includes(`connection to ${relay.url} lost`), 'the chat to say the connection was lost');
    // Another client of the same person speaks on the thread while this one is cut off.
    const elsewhere = await server.request('POST', `/api/threads/${threadId}/messages`, { body: { content: 'said elsewhere' } });
    expect(elsewhere.status).toBe(200);
    await relay.restore();
    await chat.until(() => chat.stdout().includes('You said: "said elsewhere"'), 'the reply given while the connection was down');
    chat.child.stdin.end();
    expect(await chat.exited).toBe(0);
    expect(chat.stdout().match(/You said: "before the drop"/g)).toHaveLength(1);
    expect(chat.stdout().match(/You said: "said elsewhere"/g)).toHaveLength(1);
  });

  /**
   * A chat through a relay whose connection drops while a reply streams; its input then
   * ends, and the run finishes on the server. The relay is still down when this returns.
   */
  async function cutOffMidReply(url: string, server: () => TestServer) {
    const relay = await startRelay(url);
    onTestFinished(() => relay.close());
    const chat = startChat(relay.url);
    chat.child.stdin.write('take your time\n');
    await chat.until(() => chat.stdout().includes('[demo model]'), 'the reply to start streaming');
    const threadId = threadIdOf(chat.stdout());
    await relay.drop();
    await chat.until(() => chat.stderr().includes('lost'), 'the chat to say the connection was lost');
    chat.child.stdin.end();
    await waitFor(async () => ((await server().request('GET', `/api/threads/${threadId}/runs`)).body.runs as Array<{ status: string }>).every((run) => run.status !== 'running'), 30_000, 'the run to end');
    return { relay, chat, threadId };
  }

  it('a reply cut off by a dropped connection is finished after the reconnect, and the end of input waits for it', async () => {
    const slow = await startTestServer({ kind: 'sqlite' }, { demoTokenDelayMs: 60 });
    onTestFinished(() => slow.destroy());
    // The run finishes on the server meanwhile.
    const { relay, chat } = await cutOffMidReply(slow.url, () => slow);
    expect(chat.child.exitCode).toBeNull();
    await relay.restore();
    expect(await chat.exited).toBe(0);
    expect(chat.stdout()).toContain('Anything else?');
  });

  it('a reply finished while the connection was down and the server restarted (its events gone) is read from the history', async () => {
    const restartable = await startRestartableServer({ demoTokenDelayMs: 60 });
    onTestFinished(() => restartable.destroy());
    const { relay, chat } = await cutOffMidReply(restartable.url, () => restartable.server());
    // A restart: the events kept for replay (SQLite: in memory) are gone.
    await restartable.stop();
    await restartable.start();
    await relay.restore();
    expect(await chat.exited).toBe(0);
    expect(chat.stdout()).toContain('agent> [demo model] You said: "take your time". Configure VIGIL_MODEL for real answers. Anything else?\n');
  });

  it('a message lost as the connection dropped is named as unconfirmed, and the exit code says so', async () => {
    const relay = await startRelay(server.url);
    onTestFinished(() => relay.close());
    const chat = startChat(relay.url);
    chat.child.stdin.write('first\n');
    await chat.until(() => chat.stdout().includes('You said: "first"'), 'the first reply');
    relay.swallow();
    chat.child.stdin.write('lost words\n');
    await waitFor(() => relay.swallowed() > 0, 30_000, 'the message to be sent into the void');
    await relay.drop();
    await chat.until(() => chat.stderr().includes('lost'), 'the chat to say the connection was lost');
    await relay.restore();
    await chat.until(() => chat.stderr().includes('unconfirmed: "lost words" was sent as the connection dropped'), 'the chat to name the lost message');
    chat.child.stdin.end();
    expect(await chat.exited).toBe(1);
  });

  it('gives up after a bounded number of attempts, naming every message not sent, with exit 1', async () => {
    const restartable = await startRestartableServer();
    onTestFinished(() => restartable.destroy());
    const input = new PassThrough();
    let stdout = '';
    let stderr = '';
    const output = new Writable({ write: (chunk: Buffer, _encoding, done) => ((stdout += chunk.toString('utf8')), done()) });
    const errorOutput = new Writable({ write: (chunk: Buffer, _encoding, done) => ((stderr += chunk.toString('utf8')), done()) });
    const code = chat({ url: restartable.url, token: ALICE.token, input, output, errorOutput, reconnectDelaysMs: [10, 10, 10] });
    input.write('hello\n');
    await waitFor(() => stdout.includes('You said: "hello"'), 10_000, 'the reply');
    await restartable.stop();
    await waitFor(() => stderr.includes('lost'), 10_000, 'the chat to say the connection was lost');
    input.write('still here?\n');
    expect(await code).toBe(1);
    expect(stderr).toContain(`vigil chat: could not reconnect to ${restartable.url}; giving up`);
    expect(stderr).toContain('vigil chat: not sent: "still here?"');
  });
});
