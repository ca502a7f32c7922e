import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { orphanedRunsSuite } from './orphaned-runs.suite.js';

const postgres = await postgresTarget();

describePostgres('orphaned runs on PostgreSQL', postgres, () => {
  orphanedRunsSuite(() => ({ kind: 'postgres', url: postgres.url }));
});
