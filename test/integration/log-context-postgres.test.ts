import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { logContextSuite } from './log-context.suite.js';

const postgres = await postgresTarget();

describePostgres('log context on PostgreSQL', postgres, () => {
  logContextSuite(() => ({ kind: 'postgres', url: postgres.url }));
});
