import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { postgresStoreBackend } from '../helpers/thread-store-backends.js';
import { threadSaverSuite } from './thread-saver.suite.js';

const postgres = await postgresTarget();

describePostgres('thread saver: PostgreSQL', postgres, () => {
  threadSaverSuite(postgresStoreBackend);
});
