import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { contextPlannerSuite } from './context-planner.suite.js';

const postgres = await postgresTarget();

describePostgres('bounded model context in the planner, on PostgreSQL', postgres, () => {
  contextPlannerSuite(() => ({ kind: 'postgres', url: postgres.url }));
});
