import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { modelServerSuite } from './model-server.suite.js';

const postgres = await postgresTarget();

describePostgres('vigil against a scripted model server (PostgreSQL)', postgres, () => {
  modelServerSuite(() => ({ kind: 'postgres', url: postgres.url }));
});
