import { describe } from 'vitest';
import { protocolQueuedKillSuite } from './protocol-queued-kill.suite.js';

describe('LangGraph protocol: a queued run whose server died, server process on SQLite', () => {
  protocolQueuedKillSuite(async () => ({ env: {}, cleanup: async () => undefined }));
});
