import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { telegramApprovalsSuite } from './telegram-approvals.suite.js';

const postgres = await postgresTarget();

describePostgres('approvals through Telegram on PostgreSQL', postgres, () => {
  telegramApprovalsSuite(() => ({ kind: 'postgres', url: postgres.url }), { slowMs: 1_000 });
});
