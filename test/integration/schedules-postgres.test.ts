import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { schedulesSuite } from './schedules.suite.js';

const postgres = await postgresTarget();

describePostgres('schedules on PostgreSQL', postgres, () => {
  schedulesSuite(() => ({ kind: 'postgres', url: postgres.url }));
});
