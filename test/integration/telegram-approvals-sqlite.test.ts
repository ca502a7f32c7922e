import { describe } from 'vitest';
import { telegramApprovalsSuite } from './telegram-approvals.suite.js';

describe('approvals through Telegram on SQLite', () => {
  telegramApprovalsSuite(() => ({ kind: 'sqlite' }), { slowMs: 0 });
});
