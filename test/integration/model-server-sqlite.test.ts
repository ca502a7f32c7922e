import { describe } from 'vitest';
import { modelServerSuite } from './model-server.suite.js';

describe('vigil against a scripted model server (SQLite)', () => {
  modelServerSuite(() => ({ kind: 'sqlite' }));
});
