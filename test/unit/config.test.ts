import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, loadListenAddress } from '../../src/config.js';
import { localServerUrl } from '../../src/cli/chat-command.js';
import { isVigilError } from '../../src/domain/errors.js';

function configError(environment: Record<string, string>): string {
  try {
    loadConfig(environment);
  } catch (error) {
    if (isVigilError(error) && error.code === 'CONFIG_INVALID') return error.message;
    throw error;
  }
  throw new Error('expected CONFIG_INVALID');
}

describe('config', () => {
  it('defaults: loopback, port 8787, SQLite under ./data, demo model, one local user', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ host: '127.0.0.1', port: 8787, dataDir: './data', databaseUrl: undefined, model: 'demo', modelConfigured: false });
    expect(config.authTokens.size).toBe(0);
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('names the bad setting', () => {
    expect(configError({ VIGIL_PORT: 'eighty' })).toContain('VIGIL_PORT');
    expect(configError({ VIGIL_MODEL: 'gpt-4' })).toContain('VIGIL_MODEL');
    expect(configError({ DATABASE_URL: 'mysql://x' })).toContain('DATABASE_URL');
    expect(configError({ VIGIL_LOG_LEVEL: 'loud' })).toContain('VIGIL_LOG_LEVEL');
    expect(configError({ VIGIL_AUTH_TOKENS: 'alice' })).toContain('VIGIL_AUTH_TOKENS');
    expect(configError({ VIGIL_AUTH_TOKENS: 'alice:short' })).toContain('shorter than 16');
    expect(configError({ VIGIL_MODEL: 'anthropic:claude-sonnet-4-5' })).toContain('ANTHROPIC_API_KEY');
  });

  it('reads a number setting from decimal digits only: a blank or hexadecimal value is refused, not read as 0 or 80', () => {
    // Number(' ') is 0: a blank port listened on a random one, a blank grace period gave none.
    expect(configError({ VIGIL_PORT: ' ' })).toContain('VIGIL_PORT: must be a whole number');
    expect(configError({ VIGIL_SHUTDOWN_TIMEOUT_MS: '\t' })).toContain('VIGIL_SHUTDOWN_TIMEOUT_MS: must be a whole number');
    expect(configError({ VIGIL_METRICS_PORT: '0x50' })).toContain('VIGIL_METRICS_PORT: must be a whole number');
    expect(configError({ VIGIL_BODY_LIMIT: '1e6' })).toContain('VIGIL_BODY_LIMIT: must be a whole number');
    expect(configError({ VIGIL_PORT: '-1' })).toContain('VIGIL_PORT: Too small');
    expect(loadConfig({ VIGIL_PORT: ' 9000 ', VIGIL_TIMER_CONCURRENCY: '4' })).toMatchObject({ port: 9000, timerConcurrency: 4 });
  });

  it('refuses an endpoint that is not http(s), and a Telegram webhook URL that is not https: they only failed at first use', () => {
    expect(configError({ OPENAI_BASE_URL: 'javascript:alert(1)' })).toContain('OPENAI_BASE_URL');
    expect(configError({ OTEL_EXPORTER_OTLP_ENDPOINT: 'ftp://collector:4318' })).toContain('OTEL_EXPORTER_OTLP_ENDPOINT');
    expect(configError({ VIGIL_TELEGRAM_API_ROOT: 'file:///etc/passwd' })).toContain('VIGIL_TELEGRAM_API_ROOT');
    const token = '123456789:AAbcdefghijklmnopqrstuvwxyz';
    const secret = 'a-webhook-secret-0123';
    expect(configError({ VIGIL_TELEGRAM_BOT_TOKEN: token, VIGIL_TELEGRAM_MODE: 'webhook', VIGIL_TELEGRAM_WEBHOOK_SECRET: secret, VIGIL_TELEGRAM_WEBHOOK_URL: 'http://bot.example.com/hook' })).toContain('https');
    expect(loadConfig({ OPENAI_BASE_URL: 'http://127.0.0.1:11434/v1', VIGIL_TELEGRAM_BOT_TOKEN: token, VIGIL_TELEGRAM_MODE: 'webhook', VIGIL_TELEGRAM_WEBHOOK_SECRET: secret, VIGIL_TELEGRAM_WEBHOOK_URL: 'https://bot.example.com/hook' }).openaiBaseUrl).toBe('http://127.0.0.1:11434/v1');
  });

  it('refuses Telegram settings that would do nothing: without a bot token (a misspelt token variable), a webhook URL in polling mode', () => {
    for (const [key, raw] of [['VIGIL_TELEGRAM_MODE', 'webhook'], ['VIGIL_TELEGRAM_WEBHOOK_SECRET', 'a-webhook-secret-0123'], ['VIGIL_TELEGRAM_WEBHOOK_URL', 'https://bot.example.com/hook'], ['VIGIL_TELEGRAM_ALLOWED_CHATS', '42']] as const) {
      const message = configError({ [key]: raw, VIGIL_TELEGRAM_BOTTOKEN: '123456789:AAbcdefghijklmnopqrstuvwxyz' });
      expect(message, key).toContain(key);
      expect(message, key).toContain('VIGIL_TELEGRAM_BOT_TOKEN');
    }
    expect(configError({ VIGIL_TELEGRAM_BOT_TOKEN: '123456789:AAbcdefghijklmnopqrstuvwxyz', VIGIL_TELEGRAM_WEBHOOK_URL: 'https://bot.example.com/hook' })).toContain('polling');
  });

  it('refuses a model timeout longer than a Node timer can wait (it fired at once: every model call failed as stalled)', () => {
    expect(configError({ VIGIL_MODEL_TIMEOUT_MS: '5000000000' })).toContain('VIGIL_MODEL_TIMEOUT_MS: Too big');
    expect(loadConfig({ VIGIL_MODEL_TIMEOUT_MS: '2147483647' }).modelTimeoutMs).toBe(2_147_483_647);
  });

  it('I12: refuses a token given to two users (the later took it over), and a token list naming nobody (auth silently off)', () => {
    expect(configError({ VIGIL_AUTH_TOKENS: 'alice:0123456789abcdef,bob:0123456789abcdef' })).toContain('"alice" and "bob" have the same token');
    expect(configError({ VIGIL_AUTH_TOKENS: ',,' })).toContain('VIGIL_AUTH_TOKENS: names no "user:token" pair');
    expect(configError({ VIGIL_AUTH_TOKENS: ' , ', VIGIL_HOST: '0.0.0.0' })).toContain('VIGIL_AUTH_TOKENS');
    // One user with two tokens (a rotation) stays allowed.
    const rotating = loadConfig({ VIGIL_AUTH_TOKENS: 'alice:0123456789abcdef,alice:fedcba9876543210' });
    expect([...rotating.authTokens.values()]).toEqual(['alice', 'alice']);
  });

  it('I12: refuses a non-loopback host without tokens, allows it with them', () => {
    expect(configError({ VIGIL_HOST: '0.0.0.0' })).toContain('VIGIL_HOST');
    const config = loadConfig({ VIGIL_HOST: '0.0.0.0', VIGIL_AUTH_TOKENS: 'alice:aaaaaaaaaaaaaaaa,bob:bbbbbbbbbbbbbbbb' });
    expect([...config.authTokens.entries()]).toEqual([
      ['aaaaaaaaaaaaaaaa', 'alice'],
      ['bbbbbbbbbbbbbbbb', 'bob'],
    ]);
  });

  it('reads a config file, with the environment winning, and refuses unknown names in it', () => {
    const directory = mkdtempSync(join(tmpdir(), 'vigil-config-'));
    const file = join(directory, 'vigil.json');
    writeFileSync(file, JSON.stringify({ VIGIL_PORT: 9000, VIGIL_DATA_DIR: '/tmp/x' }));
    expect(loadConfig({ VIGIL_CONFIG_FILE: file, VIGIL_PORT: '9100' })).toMatchObject({ port: 9100, dataDir: '/tmp/x' });
    writeFileSync(file, JSON.stringify({ VIGIL_PROT: 9000 }));
    expect(configError({ VIGIL_CONFIG_FILE: file })).toContain('VIGIL_PROT');
  });

  it('a client finds the local server where its settings have it listen (VIGIL_HOST, VIGIL_PORT, the config file), checked like the server checks them', () => {
    expect(localServerUrl({})).toBe('http://127.0.0.1:8787');
    expect(localServerUrl({ VIGIL_PORT: '18795' })).toBe('http://127.0.0.1:18795');
    expect(localServerUrl({ VIGIL_HOST: 'localhost', VIGIL_PORT: '9000' })).toBe('http://localhost:9000');
    // A server on every interface is reached on loopback; an IPv6 host is bracketed.
    expect(localServerUrl({ VIGIL_HOST: '0.0.0.0', VIGIL_PORT: '9000' })).toBe('http://127.0.0.1:9000');
    expect(localServerUrl({ VIGIL_HOST: '::', VIGIL_PORT: '9000' })).toBe('http://[::1]:9000');
    const directory = mkdtempSync(join(tmpdir(), 'vigil-config-'));
    const file = join(directory, 'vigil.json');
    writeFileSync(file, JSON.stringify({ VIGIL_PORT: 9001 }));
    expect(localServerUrl({ VIGIL_CONFIG_FILE: file })).toBe('http://127.0.0.1:9001');
    expect(localServerUrl({ VIGIL_CONFIG_FILE: file, VIGIL_PORT: '9002' })).toBe('http://127.0.0.1:9002');
    // Only the address is needed: a server setting the client does not use cannot stop it...
    expect(localServerUrl({ VIGIL_PORT: '9003', VIGIL_MODEL: 'anthropic:claude-sonnet-4-5' })).toBe('http://127.0.0.1:9003');
    // ...but a bad address is refused as the server refuses it.
    expect(() => localServerUrl({ VIGIL_PORT: 'eighty' })).toThrow(/CONFIG_INVALID|VIGIL_PORT/);
    expect(() => loadListenAddress({ VIGIL_PORT: 'eighty' })).toThrow(/VIGIL_PORT/);
  });
});
