import { describe } from 'vitest';
import { metricsSuite } from './metrics.suite.js';

describe('metrics on SQLite', () => {
  metricsSuite(() => ({ kind: 'sqlite' }));
});
