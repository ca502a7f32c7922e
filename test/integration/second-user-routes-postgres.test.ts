import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { secondUserRoutesSuite } from './second-user-routes.suite.js';

const postgres = await postgresTarget();

describePostgres('second-user access to every route (I12) on PostgreSQL', postgres, () => {
  secondUserRoutesSuite(() => ({ kind: 'postgres', url: postgres.url }));
});
