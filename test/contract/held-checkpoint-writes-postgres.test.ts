import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { postgresStoreBackend } from '../helpers/thread-store-backends.js';
import { heldCheckpointWritesSuite } from './held-checkpoint-writes.suite.js';

const postgres = await postgresTarget();

describePostgres('held checkpoint writes: PostgreSQL', postgres, () => {
  heldCheckpointWritesSuite(postgresStoreBackend);
});
