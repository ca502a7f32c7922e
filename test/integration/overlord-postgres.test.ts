import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { overlordRealQueueSuite, overlordSuite } from './overlord.suite.js';

const postgres = await postgresTarget();

describePostgres('overlord on PostgreSQL', postgres, () => {
  overlordSuite(() => ({ kind: 'postgres', url: postgres.url }));
});

describePostgres('overlord on PostgreSQL, through pg-boss', postgres, () => {
  overlordRealQueueSuite(() => ({ kind: 'postgres', url: postgres.url }));
});
