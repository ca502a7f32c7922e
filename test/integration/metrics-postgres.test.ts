import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { metricsSuite } from './metrics.suite.js';

const postgres = await postgresTarget();

describePostgres('metrics on PostgreSQL', postgres, () => {
  metricsSuite(() => ({ kind: 'postgres', url: postgres.url }));
});
