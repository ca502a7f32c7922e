import { describe } from 'vitest';
import { mcpToolsSuite } from './mcp-tools.suite.js';

describe('MCP tools for planners on SQLite', () => {
  mcpToolsSuite(() => ({ kind: 'sqlite' }));
});
