import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { persistenceSuite } from './persistence.suite.js';

const postgres = await postgresTarget();

describePostgres('persistence on PostgreSQL', postgres, () => {
  persistenceSuite(() => ({ kind: 'postgres', url: postgres.url }));
});
