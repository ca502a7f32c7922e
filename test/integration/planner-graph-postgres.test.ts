import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { plannerGraphSuite } from './planner-graph.suite.js';

const postgres = await postgresTarget();

describePostgres('planner graph on PostgreSQL', postgres, () => {
  plannerGraphSuite(() => ({ kind: 'postgres', url: postgres.url }));
});
