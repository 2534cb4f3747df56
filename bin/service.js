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
  // A gateway spends most of its life idle between short turns, and what it keeps is small. So:
  // a young generation that stays at its initial size (1 MB semi-spaces rather than growing to
  // 8-16 MB), and an old generation collected once it grows 20% past what survived the last full
  // collection (rather than up to 4x): measured, 14 MB less resident at idle and 8 MB less after a
  // burst of turns, for no CPU per turn we could measure. Set before the CLI loads, while the heap is new.
  // And no optimizing compiler (TurboFan): our JavaScript is glue between I/O and native code
  // (JSON, regex, crypto, SQLite), and the functions that get warm at start-up (module bodies, the
  // YAML lexer) and during the first turns were compiled on background threads for nothing we
  // could measure on the main thread. Measured: 5 MB less resident at idle and 7 MB less after
  // load, and the compiler threads' 1-2 ms of CPU per turn gone. The interpreter and the baseline
  // compiler remain; the few loops over large input search with native regexes (server/body.ts).
  // --optimize-for-size: V8's heuristics for small devices (heap growth, table sizes): measured,
  // 4-5 MB less resident after a burst of turns.
  const v8 = await import('node:v8');
  v8.setFlagsFromString('--semi-space-growth-factor=1');
  v8.setFlagsFromString('--heap-growing-percent=20');
  v8.setFlagsFromString('--no-opt');
  v8.setFlagsFromString('--optimize-for-size');
  await import('../dist/cli.js');
}
