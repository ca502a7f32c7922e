import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { contextWindowSuite } from './context-window.suite.js';

const postgres = await postgresTarget();

describePostgres('bounded model context through the server on PostgreSQL', postgres, () => {
  contextWindowSuite(() => ({ kind: 'postgres', url: postgres.url }));
});
