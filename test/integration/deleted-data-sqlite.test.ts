import { deletedDataSuite } from './deleted-data.suite.js';

deletedDataSuite(() => ({ kind: 'sqlite' }));
