import { describe } from 'vitest';
import { logContextSuite } from './log-context.suite.js';

describe('log context on SQLite', () => {
  logContextSuite(() => ({ kind: 'sqlite' }));
});
