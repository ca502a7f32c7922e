import { describe } from 'vitest';
import { webhookSuite } from './webhook.suite.js';

describe('signed webhooks on SQLite', () => {
  webhookSuite(() => ({ kind: 'sqlite' }));
});
