import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { autonomyBudgetSuite } from './autonomy-budget.suite.js';

const postgres = await postgresTarget();

describePostgres('autonomy budget on PostgreSQL', postgres, () => {
  autonomyBudgetSuite(() => ({ kind: 'postgres', url: postgres.url }));
});
