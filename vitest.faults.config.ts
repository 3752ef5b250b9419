import { defineConfig } from 'vitest/config';

// `npm run test:faults`: the reliability suite (kill -9 and resume, fuzzed inputs, sandbox abuse).
// Slower than `npm test`, so it is its own command (README "Reliability").
export default defineConfig({
  test: {
    include: ['test/faults/**/*.test.ts'],
    testTimeout: 600_000,
    hookTimeout: 300_000,
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
  },
});
