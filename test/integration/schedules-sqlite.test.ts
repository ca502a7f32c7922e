import { describe } from 'vitest';
import { schedulesSuite } from './schedules.suite.js';

describe('schedules on SQLite', () => {
  schedulesSuite(() => ({ kind: 'sqlite' }));
});
