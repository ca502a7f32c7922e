import { defineConfig } from 'vitest/config';

// Integration suites start real servers and databases; two cores means few workers,
// generous timeouts, and no timed assertions (benchmarks live in bench/).
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 2,
  },
});
