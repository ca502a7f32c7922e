import { describe } from 'vitest';
import { websocketRequestsSuite } from './websocket-requests.suite.js';

describe('WebSocket requests on SQLite', () => {
  websocketRequestsSuite(() => ({ kind: 'sqlite' }));
});
