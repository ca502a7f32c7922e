import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { mcpToolsSuite } from './mcp-tools.suite.js';

const postgres = await postgresTarget();

describePostgres('MCP tools for planners on PostgreSQL', postgres, () => {
  mcpToolsSuite(() => ({ kind: 'postgres', url: postgres.url }));
});
