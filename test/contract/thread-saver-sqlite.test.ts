import { describe } from 'vitest';
import { sqliteStoreBackend } from '../helpers/thread-store-backends.js';
import { threadSaverSuite } from './thread-saver.suite.js';

describe('thread saver: SQLite', () => {
  threadSaverSuite(sqliteStoreBackend);
});
