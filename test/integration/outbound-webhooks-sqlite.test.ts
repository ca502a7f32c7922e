import { describe } from 'vitest';
import { outboundWebhooksSuite } from './outbound-webhooks.suite.js';

describe('outbound webhooks on SQLite', () => {
  outboundWebhooksSuite(() => ({ kind: 'sqlite' }), { slowMs: 0 });
});
