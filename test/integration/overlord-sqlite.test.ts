import { describe } from 'vitest';
import { overlordRealQueueSuite, overlordSuite } from './overlord.suite.js';

describe('overlord on SQLite', () => {
  overlordSuite(() => ({ kind: 'sqlite' }));
});

describe('overlord on SQLite, through the embedded JobQueue', () => {
  overlordRealQueueSuite(() => ({ kind: 'sqlite' }));
});
