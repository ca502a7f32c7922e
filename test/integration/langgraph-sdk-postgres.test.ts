import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { langgraphSdkSuite } from './langgraph-sdk.suite.js';

const postgres = await postgresTarget();

describePostgres('LangGraph SDK against vigil on PostgreSQL', postgres, () => {
  langgraphSdkSuite(() => ({ kind: 'postgres', url: postgres.url }));
});
