import { describe } from 'vitest';
import { planApiSuite } from './plan-api.suite.js';

describe('plan API on SQLite', () => {
  planApiSuite(() => ({ kind: 'sqlite' }));
});
