import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { websocketRequestsSuite } from './websocket-requests.suite.js';

const postgres = await postgresTarget();

describePostgres('WebSocket requests on PostgreSQL', postgres, () => {
  websocketRequestsSuite(() => ({ kind: 'postgres', url: postgres.url }));
});
