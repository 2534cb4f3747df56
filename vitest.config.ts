import { configDefaults, defineConfig } from 'vitest/config';

// Integration and e2e tests spawn real processes and bind real ports; two cores is all CI has,
// so files run in a small pool. Every timeout here only catches a hang: a loaded machine makes
// the suite slower, never red (no test asserts a duration; speed is `npm run bench`).

/**
 * Files that run in this process only (their engines and platforms are children or sockets they
 * stop themselves) and put back what they change (process.env, Date): they share their workers,
 * so each file does not load the SDKs, zod and our modules again (measured on the channel tests:
 * a third less CPU). The rest (CLI commands run in-process, gateways and CLIs spawned, the
 * package, the browser) get a fresh process per file.
 */
const SHARED_WORKERS = ['test/unit/**/*.test.ts', 'test/integration/{channels,fakes,core,server,store,engines}/**/*.test.ts'];

export default defineConfig({
  test: {
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 180_000,
    hookTimeout: 180_000,
    // expect.poll waits for a page or an adapter to settle; its default of 1 s is a budget.
    expect: { poll: { timeout: 60_000 } },
    env: { NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost' },
    projects: [
      { extends: true, test: { name: 'shared', include: SHARED_WORKERS, isolate: false } },
      { extends: true, test: { name: 'isolated', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...SHARED_WORKERS] } },
    ],
  },
});
