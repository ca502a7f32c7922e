import { describe } from 'vitest';
import { persistenceSuite } from './persistence.suite.js';

describe('persistence on SQLite', () => {
  persistenceSuite(() => ({ kind: 'sqlite' }));
});
