import { defineConfig } from 'vitest/config';

// Integration and e2e tests spawn real processes and bind real ports; two cores is all CI has,
// so files run in a small pool and every test gets a generous but bounded timeout.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    env: { NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost' },
  },
});
