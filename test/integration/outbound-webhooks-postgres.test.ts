import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { outboundWebhooksSuite } from './outbound-webhooks.suite.js';

const postgres = await postgresTarget();

describePostgres('outbound webhooks on PostgreSQL', postgres, () => {
  outboundWebhooksSuite(() => ({ kind: 'postgres', url: postgres.url }), { slowMs: 1_000 });
});
