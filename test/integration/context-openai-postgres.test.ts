import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { contextOpenAiSuite } from './context-openai.suite.js';

const postgres = await postgresTarget();

describePostgres('bounded model context against an OpenAI-compatible server, on PostgreSQL', postgres, () => {
  contextOpenAiSuite(() => ({ kind: 'postgres', url: postgres.url }));
});
