import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { heartbeatRecallSuite } from './heartbeat-recall.suite.js';

const postgres = await postgresTarget();

describePostgres('heartbeat memory recall (PostgreSQL)', postgres, () => {
  heartbeatRecallSuite(() => ({ kind: 'postgres', url: postgres.url }));
});
