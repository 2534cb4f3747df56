#!/usr/bin/env node
// `service --version` (or -v) alone is answered here, before the CLI loads: commander, the config
// schema and the command table cost more than starting node itself, and a version check (an
// installer's, a script's) should not. Every other invocation goes to the CLI, which prints the
// same line for a --version given with other arguments.
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === '--version' || args[0] === '-v')) {
  const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  process.stdout.write(`${version}\n`);
} else {
  // The heap settings (heap-flags.js), and no optimizing compiler (TurboFan) while the command
  // starts: module bodies, the YAML lexer and the config schema run hot once, and compiling them
  // optimised cost 4-5 MB resident that an idle gateway kept, for nothing. `service gateway` turns
  // it back on once it serves (core/util/optimizer.ts): /health under load and long sessions need it.
  const { applyHeapFlags } = await import('./heap-flags.js');
  applyHeapFlags();
  const v8 = await import('node:v8');
  v8.setFlagsFromString('--no-opt');
  // The bundled command line (scripts/bundle.mjs): one chunk per lazy import, loaded as needed.
  await import('../dist/bundle/cli.js');
}
