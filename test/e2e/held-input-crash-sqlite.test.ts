import { describe } from 'vitest';
import { heldInputCrashSuite } from './held-input-crash.suite.js';

describe('a crash while the model answers, server process on SQLite', () => {
  heldInputCrashSuite(async () => ({ env: {}, cleanup: async () => undefined }));
});
