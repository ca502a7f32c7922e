import { describe } from 'vitest';
import { heartbeatRecallSuite } from './heartbeat-recall.suite.js';

describe('heartbeat memory recall (SQLite)', () => {
  heartbeatRecallSuite(() => ({ kind: 'sqlite' }));
});
