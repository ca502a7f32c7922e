import { describe } from 'vitest';
import { plannerGraphSuite } from './planner-graph.suite.js';

describe('planner graph on SQLite', () => {
  plannerGraphSuite(() => ({ kind: 'sqlite' }));
});
