import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { threadEventsSuite } from './thread-events.suite.js';

const postgres = await postgresTarget();

describePostgres('thread events on PostgreSQL', postgres, () => {
  threadEventsSuite(() => ({ kind: 'postgres', url: postgres.url }));
});
