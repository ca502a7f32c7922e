import { describe } from 'vitest';
import { telegramSuite } from './telegram.suite.js';

describe('Telegram channel on SQLite', () => {
  telegramSuite(() => ({ kind: 'sqlite' }));
});
