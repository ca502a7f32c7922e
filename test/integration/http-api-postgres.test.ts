import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { httpApiSuite } from './http-api.suite.js';

const postgres = await postgresTarget();

describePostgres('HTTP API on PostgreSQL', postgres, () => {
  httpApiSuite(() => ({ kind: 'postgres', url: postgres.url }));
});
