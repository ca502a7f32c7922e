import { describe } from 'vitest';
import { serverProcessSuite } from './server-process.suite.js';

describe('server process on SQLite (the default)', () => {
  serverProcessSuite(async () => ({ env: {}, cleanup: async () => undefined }));
});
