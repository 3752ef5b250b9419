import { defineConfig } from 'vitest/config';

// Tests run on the pure-JS wasm/cpu backends; tiny models keep the suite inside the CI budget.
export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'scripts/**/*.test.ts', 'docker/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Two cores here: more workers only contend.
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
  },
});
