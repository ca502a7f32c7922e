import { describe } from 'vitest';
import { contextCrashSuite } from './context-crash.suite.js';

describe('a crash mid-fold, server process on SQLite', () => {
  contextCrashSuite(async () => ({ env: {}, cleanup: async () => undefined }));
});
