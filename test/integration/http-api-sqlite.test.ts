import { describe } from 'vitest';
import { httpApiSuite } from './http-api.suite.js';

describe('HTTP API on SQLite', () => {
  httpApiSuite(() => ({ kind: 'sqlite' }));
});
