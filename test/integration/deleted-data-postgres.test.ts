import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { deletedDataSuite } from './deleted-data.suite.js';

const postgres = await postgresTarget();

describePostgres('deleted data on PostgreSQL', postgres, () => {
  deletedDataSuite(() => ({ kind: 'postgres', url: postgres.url }));
});
