import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { liveDeliverySuite } from './live-delivery.suite.js';

const postgres = await postgresTarget();

describePostgres('live delivery on PostgreSQL', postgres, () => {
  liveDeliverySuite(() => ({ kind: 'postgres', url: postgres.url }));
});
