import { describe } from 'vitest';
import { orphanedRunsSuite } from './orphaned-runs.suite.js';

describe('orphaned runs on SQLite', () => {
  orphanedRunsSuite(() => ({ kind: 'sqlite' }));
});
