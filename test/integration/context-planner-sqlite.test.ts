import { describe } from 'vitest';
import { contextPlannerSuite } from './context-planner.suite.js';

describe('bounded model context in the planner, on SQLite', () => {
  contextPlannerSuite(() => ({ kind: 'sqlite' }));
});
