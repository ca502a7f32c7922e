import { describe } from 'vitest';
import { envelopeRunHttpSuite } from './envelope-run-http.suite.js';

describe('run metadata through the server on SQLite', () => {
  envelopeRunHttpSuite(() => ({ kind: 'sqlite' }));
});
