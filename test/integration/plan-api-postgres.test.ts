import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { planApiSuite } from './plan-api.suite.js';

const postgres = await postgresTarget();

describePostgres('plan API on PostgreSQL', postgres, () => {
  planApiSuite(() => ({ kind: 'postgres', url: postgres.url }));
});
