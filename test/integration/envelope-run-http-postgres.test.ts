import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { envelopeRunHttpSuite } from './envelope-run-http.suite.js';

const postgres = await postgresTarget();

describePostgres('run metadata through the server on PostgreSQL', postgres, () => {
  envelopeRunHttpSuite(() => ({ kind: 'postgres', url: postgres.url }));
});
