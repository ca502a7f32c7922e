import { describe } from 'vitest';
import { contextOpenAiSuite } from './context-openai.suite.js';

describe('bounded model context against an OpenAI-compatible server, on SQLite', () => {
  contextOpenAiSuite(() => ({ kind: 'sqlite' }));
});
