import { threadEventsSuite } from './thread-events.suite.js';

threadEventsSuite(() => ({ kind: 'sqlite' }));
