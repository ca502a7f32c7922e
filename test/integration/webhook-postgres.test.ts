import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { webhookSuite } from './webhook.suite.js';

const postgres = await postgresTarget();

describePostgres('signed webhooks on PostgreSQL', postgres, () => {
  webhookSuite(() => ({ kind: 'postgres', url: postgres.url }));
});
