import { describe } from 'vitest';
import { secondUserRoutesSuite } from './second-user-routes.suite.js';

describe('second-user access to every route (I12) on SQLite', () => {
  secondUserRoutesSuite(() => ({ kind: 'sqlite' }));
});
