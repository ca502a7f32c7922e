import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { checkInRunsSuite } from './check-in-runs.suite.js';

const postgres = await postgresTarget();

describePostgres('check-in runs on PostgreSQL', postgres, () => {
  checkInRunsSuite(() => ({ kind: 'postgres', url: postgres.url }));
});
