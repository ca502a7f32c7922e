import { checkInRunsSuite } from './check-in-runs.suite.js';

checkInRunsSuite(() => ({ kind: 'sqlite' }));
