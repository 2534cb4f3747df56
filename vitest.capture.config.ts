import { defineConfig } from 'vitest/config';

// Regenerates test/fixtures/engine_{a,b,c,d}/ by running the real engine CLIs against the fake LLM.
// Not part of `vitest run`: `npx vitest run --config vitest.capture.config.ts` (takes a few minutes).
export default defineConfig({
  test: {
    include: ['test/fixtures/capture.ts', 'test/fixtures/capture-acp.ts', 'test/fixtures/capture-codex-app-server.ts'],
    pool: 'forks',
    maxWorkers: 1,
    fileParallelism: false,
    testTimeout: 180_000,
    hookTimeout: 60_000,
    env: { NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost' },
  },
});
