import { describe } from 'vitest';
import { scheduleFireRecoverySuite } from './schedule-fire-recovery.suite.js';

describe('schedule fire recovery on SQLite', () => {
  scheduleFireRecoverySuite(() => ({ kind: 'sqlite' }));
});
