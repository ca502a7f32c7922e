import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { badInputSuite } from './bad-input.suite.js';

const postgres = await postgresTarget();

describePostgres('bad input on PostgreSQL', postgres, () => {
  badInputSuite(() => ({ kind: 'postgres', url: postgres.url }));
});
