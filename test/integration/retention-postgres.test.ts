import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { retentionSuite } from './retention.suite.js';

const postgres = await postgresTarget();

describePostgres('retention on PostgreSQL', postgres, () => {
  retentionSuite(() => ({ kind: 'postgres', url: postgres.url }));
});
