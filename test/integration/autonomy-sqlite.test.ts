import { describe } from 'vitest';
import { autonomySuite } from './autonomy.suite.js';

describe('autonomy on SQLite (embedded scheduler)', () => {
  autonomySuite(() => ({ kind: 'sqlite' }), { slackMs: 150 });
});
