import { defineConfig } from 'vitest/config';

// Integration and e2e tests spawn real processes and bind real ports; two cores is all CI has,
// so files run in a small pool. Every timeout here only catches a hang: a loaded machine makes
// the suite slower, never red (no test asserts a duration; speed is `npm run bench`).
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 180_000,
    hookTimeout: 180_000,
    // expect.poll waits for a page or an adapter to settle; its default of 1 s is a budget.
    expect: { poll: { timeout: 60_000 } },
    env: { NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost' },
  },
});
