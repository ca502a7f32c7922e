import { describe } from 'vitest';
import { autonomyKillSuite } from './autonomy-kill.suite.js';

describe('autonomy: kill -9 mid-fire on SQLite', () => {
  // The embedded scheduler hands a dead process's job out again once its 5 s claim lapses.
  autonomyKillSuite(async () => ({ env: {}, cleanup: async () => undefined }), 30_000);
});
