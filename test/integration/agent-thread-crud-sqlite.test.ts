import { describe } from 'vitest';
import { agentThreadCrudSuite } from './agent-thread-crud.suite.js';

describe('agent and thread updates on SQLite', () => {
  agentThreadCrudSuite(() => ({ kind: 'sqlite' }));
});
