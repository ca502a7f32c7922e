import { describe } from 'vitest';
import { sqliteStoreBackend } from '../helpers/thread-store-backends.js';
import { heldCheckpointWritesSuite } from './held-checkpoint-writes.suite.js';

describe('held checkpoint writes: SQLite', () => {
  heldCheckpointWritesSuite(sqliteStoreBackend);
});
