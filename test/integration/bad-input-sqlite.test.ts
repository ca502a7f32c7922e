import { badInputSuite } from './bad-input.suite.js';

badInputSuite(() => ({ kind: 'sqlite' }));
