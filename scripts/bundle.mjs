#!/usr/bin/env node
// The second half of `npm run build`: the command line (dist/cli.js, as tsc emitted it, with every
// module it imports lazily) bundled into dist/bundle/, which bin/service.js runs. The library
// (dist/index.js, what `import ... from 'agent-service'` loads) stays as tsc emitted it.
//
// Why: a gateway used to load about 250 modules at start (ours, and zod's, whose entry loads every
// one of its locales). Measured on the same machine: 59 MiB resident at idle instead of 62.4, about
// 3 MiB less after load, and 25-40% less time from spawn to the first /health answer. See
// docs/performance.md.
//
// Inlined: our code, and the packages every command loads as it starts (commander, yaml, zod, and
// for the gateway h3 with what it brings: srvx and rou3, and execa with its helpers, loaded by the
// first turn), so their unused parts are left out. Every other dependency stays an import resolved from
// node_modules at run time: the platform SDKs and the engine clients carry optional native parts,
// read their own files or load lazily, and better-sqlite3 is native. Lazy imports stay lazy: each
// becomes a chunk of its own, loaded when the code reaches it.
//
// Minified, with linked source maps: `node --enable-source-maps bin/service.js ...` maps a stack
// trace back to src/.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outdir = path.join(root, 'dist', 'bundle');
const INLINED = new Set(['commander', 'yaml', 'zod', 'h3', 'execa']);

const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const missing = [...INLINED].filter((name) => !(name in pkg.dependencies));
if (missing.length > 0) {
  console.error(`scripts/bundle.mjs: ${missing.join(', ')} inlined but not a dependency any more; update INLINED`);
  process.exit(1);
}

/**
 * zod's locale index re-exports all of its 64 languages for `z.locales`, which we never read: our
 * messages are English, and zod imports its English locale by itself. The index is bundled as
 * English only (about 260 KB of minified code less in every process).
 */
const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(b) {
    b.onLoad({ filter: /[\\/]node_modules[\\/]zod[\\/]v4[\\/]locales[\\/]index\.js$/ }, (args) => ({
      contents: 'export { default as en } from "./en.js";\n',
      resolveDir: path.dirname(args.path),
      loader: 'js',
    }));
  },
};

// Chunk names carry a content hash: a bundle of an earlier build must not leave chunks behind.
fs.rmSync(outdir, { recursive: true, force: true });
await build({
  // The PATCH worker thread's script too: core/config/edit-thread.ts starts it from beside itself,
  // which in the bundle is this directory.
  entryPoints: { cli: path.join(root, 'dist', 'cli.js'), 'config-edit-worker': path.join(root, 'dist', 'core', 'config', 'config-edit-worker.js') },
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external: Object.keys(pkg.dependencies).filter((name) => !INLINED.has(name)),
  minify: true,
  sourcemap: 'linked',
  // The inlined packages that are CommonJS (commander, yaml) call require() for node's built-in
  // modules; in an ES module there is none unless we make one.
  banner: { js: "import { createRequire as __serviceRequire } from 'node:module'; const require = __serviceRequire(import.meta.url);" },
  plugins: [zodEnglishOnly],
  logLevel: 'warning',
});
