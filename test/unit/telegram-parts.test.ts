import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { isVigilError } from '../../src/domain/errors.js';
import { splitForTelegram, telegramUpdateSchema } from '../../src/channels/telegram/telegram-update.js';

const TOKEN = '7000000001:AAFakeTokenForTests_0123456789abcdefghij';

function configError(environment: Record<string, string>): string {
  try {
    loadConfig(environment);
  } catch (error) {
    if (isVigilError(error)) return error.message;
    throw error;
  }
  throw new Error('expected the config to be refused');
}

describe('Telegram settings', () => {
  it('is off without a token, on with one (polling, the local user, the default agent)', () => {
    expect(loadConfig({}).telegram).toBeUndefined();
    expect(loadConfig({ VIGIL_TELEGRAM_BOT_TOKEN: TOKEN }).telegram).toMatchObject({
      mode: 'polling',
      userId: 'local',
      agentId: 'default',
      apiRoot: 'https://api.telegram.org',
      allowedChats: undefined,
    });
  });

  it('reads the allowed chats and strips a trailing slash from the API root', () => {
    const telegram = loadConfig({ VIGIL_TELEGRAM_BOT_TOKEN: TOKEN, VIGIL_TELEGRAM_ALLOWED_CHATS: '42, -1001234567890', VIGIL_TELEGRAM_API_ROOT: 'http://127.0.0.1:9/' }).telegram;
    expect([...(telegram?.allowedChats ?? [])]).toEqual([42, -1001234567890]);
    expect(telegram?.apiRoot).toBe('http://127.0.0.1:9');
  });

  it('refuses a webhook without its secret, a malformed token, and an owner who is not a user', () => {
    expect(configError({ VIGIL_TELEGRAM_BOT_TOKEN: TOKEN, VIGIL_TELEGRAM_MODE: 'webhook' })).toContain('VIGIL_TELEGRAM_WEBHOOK_SECRET');
    expect(configError({ VIGIL_TELEGRAM_BOT_TOKEN: 'not-a-token' })).toContain('VIGIL_TELEGRAM_BOT_TOKEN');
    const tokens = { VIGIL_AUTH_TOKENS: 'alice:alice-token-0123456789' };
    expect(configError({ ...tokens, VIGIL_TELEGRAM_BOT_TOKEN: TOKEN })).toContain('VIGIL_TELEGRAM_USER');
    expect(configError({ ...tokens, VIGIL_TELEGRAM_BOT_TOKEN: TOKEN, VIGIL_TELEGRAM_USER: 'mallory' })).toContain('not a user');
    expect(loadConfig({ ...tokens, VIGIL_TELEGRAM_BOT_TOKEN: TOKEN, VIGIL_TELEGRAM_USER: 'alice' }).telegram?.userId).toBe('alice');
    expect(configError({ VIGIL_TELEGRAM_BOT_TOKEN: TOKEN, VIGIL_TELEGRAM_MODE: 'webhook', VIGIL_TELEGRAM_WEBHOOK_SECRET: 'short' })).toContain('VIGIL_TELEGRAM_WEBHOOK_SECRET');
  });
});

describe('Telegram updates and replies', () => {
  it('reads the fields it needs and lets Telegram add others', () => {
    const update = telegramUpdateSchema.parse({ update_id: 1, message: { message_id: 2, chat: { id: -5, type: 'group', title: 'x' }, text: 'hi', new_field: {} }, also_new: true });
    expect(update.message?.chat).toMatchObject({ id: -5, type: 'group' });
    expect(telegramUpdateSchema.safeParse({ update_id: 1, message: { message_id: 2, chat: { id: 1, type: 'unknown' } } }).success).toBe(false);
  });

  it('splits long replies at Telegram\'s limit, preferring line breaks', () => {
    const text = `${'a'.repeat(3000)}\n${'b'.repeat(3000)}`;
    expect(splitForTelegram(text)).toEqual(['a'.repeat(3000), 'b'.repeat(3000)]);
    const parts = splitForTelegram('c'.repeat(9000));
    expect(parts.map((part) => part.length)).toEqual([4096, 4096, 808]);
    expect(splitForTelegram('short')).toEqual(['short']);
  });
});
