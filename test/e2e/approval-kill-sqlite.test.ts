import { describe } from 'vitest';
import { approvalKillSuite } from './approval-kill.suite.js';

describe('approvals: kill -9 while a follow-up waits, server process on SQLite', () => {
  approvalKillSuite(async () => ({ env: {}, cleanup: async () => undefined }), 30_000);
});
