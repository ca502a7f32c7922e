import { describe } from 'vitest';
import { contextWindowSuite } from './context-window.suite.js';

describe('bounded model context through the server on SQLite', () => {
  contextWindowSuite(() => ({ kind: 'sqlite' }));
});
