import { afterEach, describe, expect, it } from 'vitest';
import { FakeTelegram } from '../helpers/fake-telegram.js';
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { makeTempDir, removeTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * The log of a real `vigil serve` (its own logger, as an operator runs it) never carries a
 * configured secret, whichever error message would hold it.
 */
describe('secrets in the log', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('a failed Telegram send is logged without the bot token (node-fetch puts the Bot API URL, token and all, in its message)', async () => {
    const token = '123456789:AAsecretBotTokenForTheLogTest_xyz';
    const telegram = await FakeTelegram.start({ token, hangUp: ['sendMessage'] });
    cleanups.push(() => telegram.close());
    const dataDir = await makeTempDir();
    cleanups.push(() => removeTempDir(dataDir));
    const server: ServerProcess = await startServerProcess({
      VIGIL_DATA_DIR: dataDir,
      VIGIL_TELEGRAM_BOT_TOKEN: token,
      VIGIL_TELEGRAM_API_ROOT: telegram.apiRoot,
      VIGIL_LOG_LEVEL: 'debug',
    });
    cleanups.push(() => server.stop('SIGKILL'));
    await waitFor(() => server.output().includes('"this instance long-polls telegram"'), 30_000, 'telegram polling to start');
    telegram.pushMessage({ chatId: 4242, text: 'hello bot' });
    // The reply's send is cut off: the channel logs the failure (with the error's nested cause).
    await waitFor(() => server.output().includes('"type":"FetchError"'), 30_000, 'the failed send to be logged');
    expect(telegram.callsOf('sendMessage').length).toBeGreaterThan(0);
    expect(server.output()).toContain('sendMessage failed');
    expect(server.output()).not.toContain(token);
    expect(server.output()).not.toContain('AAsecretBotTokenForTheLogTest_xyz');
  }, 90_000);
});
