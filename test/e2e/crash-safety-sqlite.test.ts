import { describe } from 'vitest';
import { crashSafetySuite } from './crash-safety.suite.js';

describe('crash safety: SIGKILL at random points on SQLite', () => {
  // A fire cut short is handed out again once the dead process's 5 s claim lapses.
  crashSafetySuite(async () => ({ env: {}, cleanup: async () => undefined }), 60_000);
});
