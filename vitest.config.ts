import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';

// Integration and e2e tests spawn real processes and bind real ports; two cores is all CI has,
// so files run in a small pool: three workers, as the files wait for sockets, child processes and
// gate files much of the time (with two, the suite kept 1.25 of the 2 cores busy on average).
// Every timeout here only catches a hang: a loaded machine makes the suite slower, never red (no
// test asserts a duration; speed is `npm run bench`).

/**
 * Files that stop what they start (processes, sockets, timers) and put back what they change
 * (process.env, Date) share their workers: each file does not load the SDKs, zod and our modules
 * again (measured on the channel tests: a third less CPU). Checked by running these folders with
 * --no-isolate. The others (the CLI tests, which run commands in this process; fleet, the
 * package, the real engine CLIs, the browser) get a fresh process per file.
 */
const SHARED_FOLDERS = ['test/unit', ...['channels', 'fakes', 'core', 'server', 'store', 'engines', 'gateway'].map((f) => `test/integration/${f}`)];

/**
 * A file that checks the whole process for handles left open (failOnLeaksAfterAll, openHandles in
 * test/helpers/resources.ts) gets a process of its own wherever it is: in a shared worker it would
 * count what the files before it are still closing.
 */
const CHECKS_WHOLE_PROCESS = /\b(failOnLeaksAfterAll|openHandles)\(/;

const root = path.dirname(fileURLToPath(import.meta.url));
const shared = SHARED_FOLDERS.flatMap((folder) =>
  fs
    .readdirSync(path.join(root, folder), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => path.posix.join(folder, f.split(path.sep).join('/')))
    .filter((file) => !CHECKS_WHOLE_PROCESS.test(fs.readFileSync(path.join(root, file), 'utf8'))),
);

export default defineConfig({
  test: {
    pool: 'forks',
    maxWorkers: 3,
    testTimeout: 180_000,
    hookTimeout: 180_000,
    // expect.poll waits for a page or an adapter to settle; its default of 1 s is a budget.
    expect: { poll: { timeout: 60_000 } },
    env: { NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost' },
    projects: [
      { extends: true, test: { name: 'shared', include: shared, isolate: false } },
      { extends: true, test: { name: 'isolated', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...shared] } },
    ],
  },
});
