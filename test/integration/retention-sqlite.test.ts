import { describe } from 'vitest';
import { retentionSuite } from './retention.suite.js';

describe('retention on SQLite', () => {
  retentionSuite(() => ({ kind: 'sqlite' }));
});
