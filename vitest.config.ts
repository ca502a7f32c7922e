import { defineConfig } from 'vitest/config';

// Integration suites start real servers and databases; two cores means few workers,
// generous timeouts, and no timed assertions (benchmarks live in bench/).
// The fleet suites start several server processes each (three instances, a thousand timers,
// processes killed at seeded points): beside another worker's suites on two cores they slow
// several-fold and their waits race the load, so they run last, one file at a time.
const FLEET = [
  'test/e2e/crash-safety-sqlite.test.ts',
  'test/e2e/crash-safety-postgres.test.ts',
  'test/e2e/autonomy-multi-instance-postgres.test.ts',
  'test/e2e/schedules-two-processes.test.ts',
  'test/e2e/approval-kill-sqlite.test.ts',
  'test/e2e/approval-kill-postgres.test.ts',
  'test/e2e/cluster-postgres.test.ts',
];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: 'suites', include: ['test/**/*.test.ts'], exclude: FLEET } },
      { extends: true, test: { name: 'fleet', include: FLEET, fileParallelism: false, sequence: { groupOrder: 1 } } },
    ],
  },
});
