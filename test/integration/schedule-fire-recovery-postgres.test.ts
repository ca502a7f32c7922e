import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { scheduleFireRecoverySuite } from './schedule-fire-recovery.suite.js';

const postgres = await postgresTarget();

describePostgres('schedule fire recovery on PostgreSQL', postgres, () => {
  scheduleFireRecoverySuite(() => ({ kind: 'postgres', url: postgres.url }));
});
