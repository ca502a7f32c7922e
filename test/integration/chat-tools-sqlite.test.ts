import { describe } from 'vitest';
import { chatToolsSuite } from './chat-tools.suite.js';

describe('tools and approvals in chat agents on SQLite', () => {
  chatToolsSuite(() => ({ kind: 'sqlite' }), { slowMs: 0 });
});
