import { describe } from 'vitest';
import { langgraphSdkSuite } from './langgraph-sdk.suite.js';

describe('LangGraph SDK against vigil on SQLite', () => {
  langgraphSdkSuite(() => ({ kind: 'sqlite' }));
});
